"""The predicted serving performance as the reader sees it: rows, memory sentence, Markdown, CLI text, the chart and
the report's section (advisor/report/serving.py, charts.serving_chart)."""
import re

import pytest

from advisor.decide.rules import recommend
from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.planner import make_plan
from advisor.report.charts import _envelope, serving_chart
from advisor.report.document import build_markdown, chart_figures
from advisor.report.serving import (memory_line, predicted, serving_markdown, serving_rows, serving_text)

K = load_knowledge()
NAMES = {e.id: e.name for e in K.engines.values()}
L40S = {"concurrency": 16, "ttft_p95_ms": 800,
        "hardware": {"gpu_vendor": "nvidia", "gpu_model": "L40S", "gpu_count": 1},
        "model": {"name": "llama-3.1-8b", "precision": "bf16", "context_tokens": 131072, "input_tokens": 2000,
                  "output_tokens": 300}}
LABEL = re.compile(r"^((fitted|rough|measured) ±\d+%|(fitted|rough): tok/s ±\d+%, ITL ±\d+%(, |; )TTFT (rough )?±\d+%"
                   r"|from measured kernel timings: tok/s ±\d+%, ITL ±\d+%(; TTFT ours(, rough)?|, TTFT) ±\d+%)$")


@pytest.fixture(scope="module")
def plan():
    return make_plan(parse_answers(L40S), None, K)


def _row(rows, name):
    return next(r for r in rows if r[0] == name)


def test_the_vllm_row_shows_its_figures_capacity_fleet_and_band(plan):
    assert plan.engines["vllm"].serving is not None
    header, rows = serving_rows(plan, K, "en")
    assert len(rows) == len(plan.engines) and all(len(r) == len(header) for r in rows)
    assert header[2] == "TTFT p95 ms, 16 users" and header[6] == "fleet for 16 users"
    v = dict(zip(header, _row(rows, "vLLM")))
    assert v["how it serves"] == "continuous batching"
    assert re.fullmatch(r"[\d,.]+", v["TTFT p95 ms, 16 users"]) and re.fullmatch(r"[\d,.]+", v["ITL p50 ms"])
    assert re.fullmatch(r"[\d,]+( \([\d,]+–[\d,]+\))?", v["users per replica"])  # N (low–high)
    assert int(v["users per replica"].split()[0].replace(",", "")) >= 16  # one L40S holds 16 users of 2,300 tokens
    assert re.fullmatch(r"[\d,]+(–[\d,]+)? × (1 GPU|\d+ GPUs( \(TP \d+\))?)", v["fleet for 16 users"])
    assert v["fleet $/h"].startswith("$") and v["$ per M output tok"].startswith("$")
    assert LABEL.match(v["prediction"])
    sv = plan.engines["vllm"].serving
    assert f"±{round(sv.band * 100)}%" in v["prediction"]  # the throughput band (the silicon label adds ITL's, TTFT's)
    one_at_a_time = dict(zip(header, _row(rows, "PyTorch + Hugging Face transformers")))
    assert one_at_a_time["how it serves"] == "one request at a time"
    text = serving_text(plan, K, "en")  # the CLI's lines: title, what it is for, the table aligned, memory, caption
    assert text[0] == "Predicted serving performance" and "Llama-3.1-8B on 1 × L40S: 16 users" in text[1]
    vllm = next(line for line in text if line.strip().startswith("vLLM "))
    assert v["users per replica"] in vllm and v["prediction"] in vllm
    assert any(line.strip().startswith("- vLLM: 16 users of about 2,300 tokens fit") for line in text)


def test_an_engine_without_a_prediction_says_so_in_one_cell(plan):
    p = plan.model_copy(deep=True)
    p.engines["onnxruntime"].serving = None
    header, rows = serving_rows(p, K, "en")
    r = _row(rows, "ONNX Runtime")
    assert r[1].startswith("not predicted") and set(r[2:]) == {"—"}
    assert "onnxruntime" not in predicted(p) and "vllm" in predicted(p)
    # a plan whose weights do not load is not predicted, whatever the planner computed for it; offload is said
    big = make_plan(parse_answers({"concurrency": 4, "model": {"name": "llama-3-70b", "precision": "fp16"},
                                   "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1,
                                                "ram_gb": 192}}), None, K)
    _, rows = serving_rows(big, K, "en")
    assert _row(rows, "vLLM")[1] == "not predicted: does not fit in memory"
    assert _row(rows, "llama.cpp")[1] == "not predicted: layers offloaded to RAM"
    assert serving_chart(big, NAMES, "en").layout.annotations[0].text == "nothing to show"
    assert "No engine's serving performance can be predicted" in serving_markdown(big, K, "en")


def test_the_memory_line_says_how_many_fit_and_how_long_one_request_may_be(plan):
    p = plan.engines["vllm"]
    line = memory_line(p, K, "en")
    assert line.startswith("16 users of about 2,300 tokens fit")
    assert f"one request may use up to {p.max_context_tokens:,} tokens" in line
    short = p.model_copy(update={"concurrency": p.max_concurrency + 50})
    assert memory_line(short, K, "en").startswith(f"only {p.max_concurrency:,} users of about 2,300 tokens fit, "
                                                  f"not the {p.max_concurrency + 50:,} asked")
    none = p.model_copy(update={"max_concurrency": 0, "loads": False})
    assert memory_line(none, K, "en").startswith("not even one request of about 2,300 tokens fits")
    assert memory_line(p, K, "zh").startswith("可容纳 16 个约 2,300 token 的用户")
    one = p.model_copy(update={"concurrency": 1})  # one user: no "users", no "others"
    assert memory_line(one, K, "en") == (f"the 1 user of about 2,300 tokens fits (up to {p.max_concurrency:,} such "
                                         f"users); its request may use up to {p.max_context_tokens:,} tokens.")
    assert "其他用户" not in memory_line(one, K, "zh")


def test_chinese_has_every_string_and_no_english_prose(plan):
    keys = [key for key in K.strings if key.startswith("srv_")]
    assert len(keys) > 20
    for key in keys:
        assert K.strings[key].zh and K.strings[key].zh != K.strings[key].en, key
    header, rows = serving_rows(plan, K, "zh")
    assert header[2] == "16 个用户时首 token p95 毫秒"
    v = dict(zip(header, _row(rows, "vLLM")))
    assert v["服务方式"] == "连续批处理" and re.match(r"^((拟合值|粗略值|实测校准值) ±\d+%|基于实测算子耗时：吞吐 ±\d+%，ITL ±\d+%(；首 token 为我们的模型|，首 token) ±\d+%)$", v["预测"])
    assert "块 GPU" in v["16 个用户所需集群"]
    md = serving_markdown(plan, K, "zh")
    assert md.startswith("## 服务性能预测") and "服务时的内存" in md and "运行于 1 × L40S" in md
    names = r"vLLM|SGLang|TensorRT-LLM|ONNX Runtime|llama\.cpp|PyTorch \+ Hugging Face transformers|Llama-3\.1-8B|L40S"
    predictor = r"aiconfigurator-core [\d.]+ \([a-z]+ [\w.]+, [a-z0-9_]+\)"  # a package and its data's ids
    commands = r"transformers serve --continuous_batching|generate\(\)"  # what to run is a command, not prose
    prose = re.sub(predictor + "|" + commands + "|" + names + r"|[\w./-]+\.py\b|token|KV Cache|GPU|TTFT|ITL|p\d\d",
                   " ", md)
    assert not re.findall(r"[A-Za-z]{3,}", prose)
    assert any("服务性能预测" in line for line in serving_text(plan, K, "zh"))


def test_user_text_is_escaped_in_the_markdown(plan):
    p = plan.model_copy(deep=True)
    p.model.name = "<img src=x onerror=alert(1)> *bold* [link](http://evil.example) a|b `code`"
    p.target.gpu_name = "L40S<script>|"
    md = serving_markdown(p, K, "en")
    assert "<img" not in md and "<script" not in md and "&lt;img src=x" in md and "L40S&lt;script&gt;" in md
    assert "\\*bold\\*" in md and "\\[link\\](http://evil.example)" in md and "a\\|b" in md and "\\`code\\`" in md
    table = [line for line in md.splitlines() if line.startswith("|")]
    cells = {len(re.findall(r"(?<!\\)\|", line)) for line in table}
    assert len(cells) == 1  # every row has as many cells as the header


def test_the_chart_draws_one_line_per_predicted_engine_and_the_target_region(plan):
    fig = serving_chart(plan, NAMES, "en")
    region = [t for t in fig.data if t.fill == "toself" and not t.meta]
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert len(region) == 1 and region[0].name == "within p95 TTFT ≤ 800 ms (predicted)"
    assert len(lines) == len(predicted(plan)) == 6
    assert fig.layout.xaxis.title.text.startswith("output tok/s per user")
    assert fig.layout.yaxis.title.text.startswith("output tok/s per GPU")
    sv = plan.engines["pytorch"].serving  # one request at a time: only one user meets 800 ms
    tr = next(t for t in lines if t.name.startswith("PyTorch"))
    assert [s.endswith("-open") for s in tr.marker.symbol] == [not lv.meets for lv in sv.levels]
    assert any(s.endswith("-open") for s in tr.marker.symbol) and not tr.marker.symbol[0].endswith("-open")
    # the region reaches the best per-GPU figure of any meeting point, and no further right than the fastest one
    meets = [(lv.output_tps_per_user, lv.output_tps_per_gpu) for s in predicted(plan).values() for lv in s.levels
             if lv.meets]
    assert max(region[0].y) == max(y for _, y in meets) and max(region[0].x) == max(x for x, _ in meets)
    zh = serving_chart(plan, NAMES, "zh")
    assert next(t for t in zh.data if t.fill == "toself" and not t.meta).name == "首 token p95 ≤ 800 毫秒以内（预测）"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_curve_draws_its_band_and_names_its_label(lang, plan):
    """Walk-3 M1: llama.cpp's "rough ±60%" curve was drawn above vLLM's with no band. Each curve now has its band as a
    shaded area in its colour, between the curve at the band's slow end and at its fast end, and its legend entry
    names the label and band; the axes hold every band whole."""
    fig = serving_chart(plan, NAMES, lang)
    bands = {t.meta["band_of"]: t for t in fig.data if t.meta and "band_of" in t.meta}
    assert set(bands) == set(predicted(plan))
    for e, sv in predicted(plan).items():
        curve = next(t for t in fig.data if t.mode == "lines+markers" and t.legendgroup == e)
        b, f = bands[e], 1 + sv.band
        n = len(curve.x)
        assert b.fill == "toself" and b.legendgroup == e and not b.showlegend
        assert list(b.x[:n]) == pytest.approx([x * f for x in curve.x])  # the fast end over the curve
        assert list(b.y[n:2 * n]) == pytest.approx([y / f for y in reversed(curve.y)])  # the slow end under it
        label = K.s("srv_chart_label_silicon" if sv.label == "silicon" else f"val_plan_label_{sv.label}", lang)
        assert curve.name.replace("<br>", " ") == K.s("srv_chart_curve", lang, engine=NAMES[e], label=label,
                                                      band=round(sv.band * 100))
        assert b.fillcolor.startswith("rgba(") and curve.line.color.lstrip("#").lower()[:2] == \
            f"{int(b.fillcolor[5:].split(',')[0]):02x}"  # the band in its curve's colour
    rough = [e for e, sv in predicted(plan).items() if sv.label == "rough"]
    assert rough and all(f"±{round(predicted(plan)[e].band * 100)}%" in next(
        t.name for t in fig.data if t.legendgroup == e and t.mode == "lines+markers") for e in rough)
    legend = [t.name.replace("<br>", " ") for t in fig.data if t.mode == "markers" and t.x == (None,)]
    assert legend == [K.s("srv_chart_band_legend", lang)]
    top = max(max(b.y) for b in bands.values())
    assert fig.layout.yaxis.range[1] >= (top if fig.layout.yaxis.type != "log" else __import__("math").log10(top))


def test_a_cpu_fleet_is_machines_and_its_chart_is_per_machine(plan):
    from advisor.report.serving import fleet_text

    p = plan.model_copy(deep=True)
    for e in p.engines.values():
        e.device, e.gpus_used = "cpu", 0
        if e.serving:
            e.serving.gpus_per_replica = 0
    sv = p.engines["vllm"].serving
    assert fleet_text(sv.model_copy(update={"replicas": 3, "replicas_high": 5}), K, "en") == "3–5 machines"
    assert fleet_text(sv.model_copy(update={"replicas": 1, "replicas_high": 1}), K, "en") == "1 machine"
    assert fleet_text(sv.model_copy(update={"replicas": 2, "replicas_high": 2}), K, "zh") == "2 台机器"
    assert fleet_text(sv.model_copy(update={"replicas": None}), K, "en") == "none meets the target"
    fig = serving_chart(p, NAMES, "en")
    assert fig.layout.yaxis.title.text.startswith("output tok/s per machine")
    assert fig.layout.title.text == K.s("srv_chart_title_cpu", "en")


def test_the_envelope_is_a_staircase_over_the_meeting_points():
    xs, ys = _envelope([(10, 100), (20, 50), (5, 80), (15, 40)], x_left=0, floor=0)
    assert list(zip(xs, ys)) == [(20, 0), (20, 50), (10, 50), (10, 100), (0, 100), (0, 0), (20, 0)]
    assert _envelope([], 0, 0) == ([], [])


@pytest.mark.parametrize("lang,title", [("en", "## Predicted serving performance"), ("zh", "## 服务性能预测")])
def test_the_report_has_the_section_and_its_chart(lang, title):
    a = parse_answers(L40S)
    rec = recommend(a, None, K, lang=lang)
    md = build_markdown(a, None, rec, [], K, lang)
    assert title in md
    section = md[md.index(title):]
    assert "vLLM" in section and ("±" in section)
    assert "serving" in chart_figures(rec, [], lang)


H100_QWEN = {"concurrency": 50, "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100", "gpu_count": 1},
             "model": {"name": "qwen3-32b", "precision": "fp8"}}


@pytest.mark.parametrize("lang,bound", [("en", "{cap} (KV-bound: {n} run at once, the rest queue)"),
                                        ("zh", "{cap}（受 KV 池限制：同时运行 {n} 路，其余排队）")])
def test_a_capacity_bound_by_the_kv_pool_says_so_instead_of_a_falsely_narrow_band(lang, bound):
    """Walk-3 L5: "users per replica 124 (123–126)" beside "fitted ±25%": past the KV pool the users queue, so the
    band's ends sit a user or two apart however rough the figures are. The cell names the pool instead."""
    plan = make_plan(parse_answers(H100_QWEN), None, K)
    header, rows = serving_rows(plan, K, lang)
    col = header.index(K.s("srv_cols", lang, users="50").split("|")[5])
    vllm, p = plan.engines["vllm"].serving, plan.engines["vllm"]
    assert vllm.kv_bound and vllm.capacity_bound == "kv" and vllm.running_cap == p.max_running == p.max_concurrency
    assert vllm.capacity_low >= vllm.running_cap  # even the band's slow end queues past the pool
    assert _row(rows, "vLLM")[col] == bound.format(cap=f"{vllm.capacity:,}", n=f"{vllm.running_cap:,}")
    for e, sv in ((e, q.serving) for e, q in plan.engines.items() if q.serving and q.serving.capacity):
        name = K.engines[e].name
        if not sv.kv_bound and sv.capacity_low is not None and sv.capacity_low != sv.capacity_high:
            # a band whose slow end is below the pool is a real band: it stays, with no KV claim
            assert "KV" not in _row(rows, name)[col] and re.search(r"\d[–]\d", _row(rows, name)[col])
    assert any(not q.serving.kv_bound and q.serving.capacity_low < q.serving.capacity_high
               for q in plan.engines.values() if q.serving and q.serving.capacity_low is not None)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_capacity_rough_by_its_ttft_says_so_in_the_label_cell(plan, lang):
    """Fitted tok/s and ITL beside a TTFT band borrowed from the class (own_label rough): the cell names TTFT rough,
    as the capacities and the fleet it sizes are; the silicon cell likewise."""
    from advisor.report.serving import label_text

    rough, fitted = K.s("val_plan_label_rough", lang), K.s("val_plan_label_fitted", lang)
    sv = next(iter(predicted(plan).values())).model_copy(update={
        "label": "fitted", "band": 0.3, "band_itl": 0.4, "band_ttft": 1.1, "own_label": "rough", "own_band": 1.1,
        "evidence": None})
    cell = label_text(sv, K, lang)
    assert cell.startswith(fitted) and rough in cell and "±110%" in cell, cell
    assert rough not in label_text(sv.model_copy(update={"own_label": "fitted"}), K, lang)
    si = label_text(sv.model_copy(update={"label": "silicon", "ttft_fixed_ms": None}), K, lang)
    assert rough in si and "±110%" in si, si
    # where the silicon predictor gives TTFT too (the engine's fixed cost known), its band is earned: never rough
    own = label_text(sv.model_copy(update={"label": "silicon", "ttft_fixed_ms": 21.4, "own_label": "fitted"}), K, lang)
    assert rough not in own and "±110%" in own and "ours" not in own and "我们的模型" not in own, own


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_transformers_line_says_its_fleet_assumes_one_request_at_a_time_unlike_its_bundle(plan, lang):
    """PyTorch + transformers is predicted as generate() one request at a time, while its deployment bundle starts
    transformers serve --continuous_batching: its predictor line says so; a batching engine's line does not."""
    from advisor.report.serving import predictor_lines

    lines = predictor_lines(plan, K, lang)
    torch = next(x for x in lines if x.startswith(K.engines["pytorch"].name))
    assert "--continuous_batching" in torch and "generate()" in torch
    assert all("--continuous_batching" not in x for x in lines if x is not torch)


@pytest.mark.parametrize("lang, said", [("en", "excluded from the ranking"), ("zh", "已排除出排名")])
def test_an_engine_the_ranking_excluded_keeps_its_figures_and_says_so(lang, said):
    """On a V100 vLLM, SGLang and TensorRT-LLM cannot run (Volta dropped): the report's serving table still shows
    what they would do, and says beside how each serves that the ranking excluded it; llama.cpp, ranked, does not."""
    a = {"concurrency": 8, "ttft_p95_ms": 2000,
         "hardware": {"gpu_vendor": "nvidia", "gpu_model": "Tesla V100-SXM2-32GB", "gpu_count": 1},
         "model": {"name": "llama-3.1-8b", "precision": "q4_k_m", "context_tokens": 8192}}
    answers = parse_answers(a)
    rec = recommend(answers, None, K, lang=lang)
    out = rec.excluded_engines
    assert {"vllm", "sglang", "tensorrt-llm"} <= out and "llama.cpp" not in out
    _, rows = serving_rows(rec.plan, K, lang, out)
    assert said in _row(rows, "vLLM")[1] and _row(rows, "vLLM")[2] != "—"
    assert said not in _row(rows, "llama.cpp")[1]
    md = build_markdown(answers, None, rec, [], K, lang)
    line = next(x for x in md.splitlines() if x.startswith("| vLLM |") and ("连续" in x or "continuous" in x))
    assert said in line
    _, plain = serving_rows(rec.plan, K, lang)  # the plan alone (the CLI's `plan`) knows no ranking
    assert said not in _row(plain, "vLLM")[1]


@pytest.mark.parametrize("lang, said", [("en", "not predicted: speech-to-text, not in the fit"),
                                        ("zh", "未预测：语音转文字不在拟合范围内")])
def test_a_speech_model_gets_no_serving_prediction_and_the_table_says_why(lang, said):
    """Whisper takes 30 s of audio through an encoder, not a prompt of tokens; planned as 1,024 tokens in and 256 out
    it was shown "ITL 24 ms, 155 tok/s, fitted ±60 %", a band earned on language models only."""
    from advisor.report.serving import why_not

    plan = make_plan(parse_answers({"concurrency": 4, "model": {"name": "openai/whisper-large-v3"},
                                    "hardware": {"gpu_vendor": "nvidia", "gpu_model": "T4", "gpu_count": 1}}),
                     None, K, lang=lang)
    assert all(p.serving is None for p in plan.engines.values())
    assert why_not(plan.engines["vllm"], plan, K, lang) == said


@pytest.mark.parametrize("lang, said", [("en", "not predicted: requests longer than the model's window"),
                                        ("zh", "未预测：请求长度超出模型窗口")])
def test_requests_longer_than_the_model_window_get_no_prediction_and_the_table_says_why(lang, said):
    """Llama-3.1-8B reads 131,072 tokens; 900,000-token prompts on 8 × H200 were predicted (TTFT 382 s, 1.6 tok/s),
    though vLLM, SGLang and TensorRT-LLM refuse a request longer than their max_model_len, the window by default.
    The same answers with prompts inside the window are predicted."""
    from advisor.report.serving import why_not

    def plan_for(prompt: int):
        return make_plan(parse_answers({"concurrency": 4, "model": {
            "name": "llama-3.1-8b", "context_tokens": 1_000_000, "input_tokens": prompt, "output_tokens": 100},
            "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H200", "gpu_count": 8}}), None, K, lang=lang)

    over = plan_for(900_000)
    assert all(p.serving is None for p in over.engines.values())
    assert why_not(over.engines["vllm"], over, K, lang) == said
    inside = plan_for(100_000)
    assert inside.engines["vllm"].serving is not None
