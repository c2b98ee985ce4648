"""The Checklist's model step asks the workload's shape (prompt lengths, shared prefixes): a prefix-heavy workload
is where SGLang's RadixAttention earns its place (issue 20), so a person must be able to say so without writing an
answers file. The choice lands in the answers, survives a language switch, and moves the ranking."""
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def _model_step() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("pages/1_Checklist.py").run()
    at.session_state["wizard_step"] = 8
    return at.run()


def test_prefix_sharing_is_asked_and_kept():
    at = _model_step()
    assert not at.exception
    box = at.selectbox(key="w_prefix")
    assert box.value == "low"
    box.set_value("high").run()
    assert at.session_state["answers"]["prefix_sharing"] == "high"
    at.selectbox(key="w_mix").set_value("long").run()
    assert at.session_state["answers"]["prompt_mix"] == "long"
    at.session_state["lang"] = "zh"
    at.run()
    assert not at.exception
    assert at.selectbox(key="w_prefix").value == "high" and at.session_state["answers"]["prefix_sharing"] == "high"
    assert "共享的提示前缀" in [b.label for b in at.selectbox]


def test_the_answer_reaches_the_ranking():
    from advisor.decide.rules import recommend
    from advisor.inputs.answers import parse_answers
    from advisor.knowledge import load_knowledge

    k = load_knowledge()
    base = {"concurrency": 64, "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 1},
            "model": {"name": "llama-3.1-8b", "precision": "bf16"}}
    low = recommend(parse_answers(base), None, k, with_flips=False)
    high = recommend(parse_answers({**base, "prefix_sharing": "high"}), None, k, with_flips=False)
    score = lambda rec, e: next(r.score for r in rec.ranking if r.engine == e)  # noqa: E731
    assert score(high, "sglang") > score(low, "sglang")
    assert score(high, "sglang") - score(low, "sglang") >= score(high, "vllm") - score(low, "vllm")


def test_a_request_rate_and_an_engine_batch_cap_are_asked_kept_and_cleared():
    """Both optional: 0 is "not set", and clearing both leaves no empty load block (the link stays short)."""
    at = _model_step()
    at.number_input(key="w_rate").set_value(4.0).run()
    at.number_input(key="w_batch").set_value(64).run()
    assert not at.exception
    assert at.session_state["answers"]["load"] == {"request_rate_rps": 4.0, "max_batch": 64}
    at.session_state["lang"] = "zh"
    at.run()
    assert at.number_input(key="w_batch").value == 64 and "请求速率" in at.number_input(key="w_rate").label
    at.number_input(key="w_rate").set_value(0.0).run()
    at.number_input(key="w_batch").set_value(0).run()
    assert "load" not in at.session_state["answers"]


def test_the_batch_cap_reaches_the_plan_the_prediction_and_the_bundle():
    from advisor.deploy import bundle_for
    from advisor.inputs.answers import parse_answers
    from advisor.knowledge import load_knowledge
    from advisor.planner import make_plan

    k = load_knowledge()
    base = {"concurrency": 200, "ttft_p95_ms": 2000,
            "hardware": {"gpu_vendor": "nvidia", "gpu_model": "h100-sxm", "gpu_count": 1},
            "model": {"name": "llama-3.1-8b", "precision": "fp8", "context_tokens": 4096, "input_tokens": 512,
                      "output_tokens": 256}}
    free, capped = (parse_answers(base), parse_answers({**base, "load": {"max_batch": 64}}))
    p0, p1 = make_plan(free, None, k), make_plan(capped, None, k)
    for e in ("vllm", "sglang", "tensorrt-llm"):
        assert p1.engines[e].max_running == 64 < p0.engines[e].max_running
        # 200 users on 64 places: the rest queue, so the capped TTFT is the longer one
        assert p1.engines[e].serving.at_users.ttft_ms_p95 > p0.engines[e].serving.at_users.ttft_ms_p95
    flags = {"vllm": "--max-num-seqs", "sglang": "--max-running-requests", "tensorrt-llm": "--max_batch_size"}
    for e, flag in flags.items():
        arg = next(a for a in bundle_for(e, p1, capped, k).args if a.flag == flag)
        assert arg.value == "64" and "load.max_batch" in arg.why


def test_an_itl_target_is_asked_kept_and_cleared():
    """Optional, 0 is "not set": the answers get itl_p95_ms (which weighs prefill/decode disaggregation) and lose it
    again; the field reads in Chinese."""
    at = _model_step()
    at.number_input(key="w_itl").set_value(30.0).run()
    assert not at.exception and at.session_state["answers"]["itl_p95_ms"] == 30.0
    at.session_state["lang"] = "zh"
    at.run()
    assert at.number_input(key="w_itl").value == 30.0 and "ITL 目标" in at.number_input(key="w_itl").label
    at.number_input(key="w_itl").set_value(0.0).run()
    assert "itl_p95_ms" not in at.session_state["answers"]
