"""One conclusion per engine from its probe runs and sweeps (walk-3 M8): the sweep decides over a probe run of the
same engine, the run is cited as supporting or contradicting it, and a held run never concludes, in the verdict and
in the report (Markdown and the PDF made from it), en and zh. Recorded results, no engine runs."""
import shutil
import subprocess

import pytest

from advisor.decide.rules import recommend
from advisor.evidence.capacity_check import check_capacity
from advisor.evidence.conclusion import page_verdict, reconcile
from advisor.evidence.verdict import revisit
from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.report.document import build_markdown, markdown_to_pdf
from probes.result import Percentiles, ProbeResult, ProbeSettings, SystemLoad
from probes.sweep_result import SweepLevel, SweepResult

K = load_knowledge()
CPU = {"concurrency": 4, "ttft_p95_ms": 1000, "model": {"params_b": 1},
       "hardware": {"gpu_vendor": "none", "cpu_cores": 2, "ram_gb": 24, "os": "linux"}}


def _probe(engine, p95, busy=False, conc=1, model="m.gguf"):
    load = SystemLoad(busy=busy, other_processes_cpu_percent=70.0 if busy else 2.0)
    return ProbeResult(engine=engine, status="ok", device="cpu", model=model, goodput=1.0 if p95 <= 1000 else 0.0,
                       output_tps_total=10.0, ttft_ms=Percentiles(p50=p95 / 2, p95=p95, p99=p95), serving="test",
                       requests_total=8, requests_ok=8, system_load=load, ttft_target_ms=1000,
                       settings=ProbeSettings(engine=engine, concurrency=conc, requests=8))


def _sweep(engine, outcomes, busy=False, model="m.gguf", inconclusive=False):
    """outcomes: per level 1, 2, 4, … meets / misses / inconclusive."""
    levels, cap, incl = [], None, None
    for i, o in enumerate(outcomes):
        c = 2 ** i
        p95 = {"meets": 300.0, "misses": 3000.0, "inconclusive": 990.0}[o]
        levels.append(SweepLevel(concurrency=c, status="ok", requests_total=20, requests_ok=20, outcome=o,
                                 ttft_ms=Percentiles(p95=p95), goodput=1.0 if o != "misses" else 0.2,
                                 ttft_p95_ci_ms=[900.0, 1100.0] if o == "inconclusive" else None, busy=busy,
                                 other_cpu_percent=70.0 if busy else 1.0, output_tps_total=5.0 * c))
        if o == "meets" and "misses" not in outcomes[:i]:
            cap = c
        if o == "inconclusive":
            incl = incl or c
    stop = {"key": "ttft", "c": levels[-1].concurrency, "p95": 3000, "target": 1000} if outcomes[-1] == "misses" \
        else {"key": "all"}
    return SweepResult(engine=engine, status="ok", device="cpu", model=model, ttft_target_ms=1000, levels=levels,
                       capacity=cap, inconclusive_at=incl, busy=busy, stop=stop, stop_reason="test")


def _conclude(results, sweeps, lang="en"):
    a = parse_answers(CPU)
    rec = recommend(a, None, K, lang=lang, with_flips=False)
    v = revisit(rec, results, 1000.0, lang, labels=[f"#{i} {r.engine}" for i, r in enumerate(results, 1)],
                knowledge=K)
    cap = check_capacity(sweeps, 4, rec.top.engine if rec.top else None, K, lang)
    return reconcile(v, cap, sweeps, 4, rec.top.engine if rec.top else None, K, lang,
                     ranked=[r.engine for r in rec.ranking]), rec


def test_the_sweep_concludes_and_a_probe_that_agrees_supports_it():
    c, _ = _conclude([_probe("llama.cpp", 300.0)], [_sweep("llama.cpp", ["meets", "meets", "meets"])])
    (e,) = c.engines
    assert e.by == "sweep" and e.outcome == "meets"
    assert e.text.startswith("Concluded from its concurrency sweep (3 level(s), 60 requests)")
    assert e.cited == [f"Probe run #1 llama.cpp at 1 concurrent request(s) supports it: {e.cited[0].split(': ', 1)[1]}"]


def test_a_probe_that_disagrees_with_the_sweep_is_cited_as_contradicting_it_and_the_sweep_decides():
    c, _ = _conclude([_probe("llama.cpp", 5000.0)], [_sweep("llama.cpp", ["meets", "meets", "meets"])])
    (e,) = c.engines
    assert e.by == "sweep" and e.outcome == "meets"
    assert "contradicts it" in e.cited[0] and "The sweep decides" in e.cited[0]


def test_walk3_m8_a_busy_probe_and_an_inconclusive_sweep_give_one_conclusion_and_no_revisit_the_hardware():
    """The walk: a busy probe's "misses … revisit the hardware" beside the sweep's "inconclusive"."""
    for lang, held_word in (("en", "is not counted"), ("zh", "不计入")):
        c, rec = _conclude([_probe("llama.cpp", 8428.0, busy=True)], [_sweep("llama.cpp", ["inconclusive"])], lang)
        (e,) = c.engines
        assert e.by == "sweep" and e.outcome == "inconclusive"
        assert held_word in e.cited[0]
        assert "revisit" not in c.summary and "重新考虑" not in c.summary


def test_a_held_sweep_never_concludes_the_probe_does_and_cites_it():
    c, _ = _conclude([_probe("llama.cpp", 300.0)], [_sweep("llama.cpp", ["misses"], busy=True)])
    (e,) = c.engines
    assert e.by == "probe" and e.outcome == "meets"
    assert e.cited[0].startswith("Its sweep is not counted: other processes used up to 70% of the CPU")


def test_nothing_concludes_when_every_run_is_held():
    c, _ = _conclude([_probe("llama.cpp", 8428.0, busy=True)], [_sweep("llama.cpp", ["misses"], busy=True)])
    (e,) = c.engines
    assert e.by == "none" and e.outcome == "none" and e.text.startswith("No conclusion")
    assert len(e.cited) == 2 and "revisit" not in c.summary


def test_a_probe_of_another_model_is_cited_and_not_compared():
    c, _ = _conclude([_probe("llama.cpp", 5000.0, model="other.gguf")], [_sweep("llama.cpp", ["meets"])])
    assert "not compared" in c.engines[0].cited[0]


@pytest.mark.parametrize("lang,section,busy_probe,sweep_words", [
    ("en", "## Verdict against the TTFT target", "Probe run #1 llama.cpp is not counted",
     "Concluded from its concurrency sweep"),
    ("zh", "## 首 token 目标的结论", "实测运行 #1 llama.cpp 不计入", "由并发扫描得出")])
def test_the_report_gives_one_conclusion_per_engine(lang, section, busy_probe, sweep_words, tmp_path):
    a = parse_answers(CPU)
    rec = recommend(a, None, K, lang=lang, with_flips=False)
    results = [_probe("llama.cpp", 8428.0, busy=True)]
    sweeps = [_sweep("llama.cpp", ["inconclusive"])]
    md = build_markdown(a, None, rec, results, K, lang, sweeps=sweeps)
    verdict = md.split(section, 1)[1].split("\n## ", 1)[0]
    assert busy_probe in verdict and sweep_words in verdict
    assert verdict.count("llama.cpp**") == 1  # one conclusion line for the engine
    # the capacity section no longer draws a summary of its own: it points at the verdict
    cap = md.split("\n## " + K.s("cap_title", lang), 1)[1].split("\n## ", 1)[0]
    assert K.s("cap_sum_inconclusive", lang) not in cap and K.s("report_verdict", lang) in cap
    assert "revisit the hardware" not in md and "请重新考虑硬件、模型大小或目标" not in md
    exe = shutil.which("pdftotext")  # the PDF is made from the same Markdown: the same one conclusion
    if exe is None:
        pytest.skip("pdftotext (poppler-utils) is not installed; `make test` installs it")
    (tmp_path / "r.pdf").write_bytes(markdown_to_pdf(md))
    text = subprocess.run([exe, str(tmp_path / "r.pdf"), "-"], capture_output=True, text=True, check=True,
                          timeout=60).stdout
    flat = "".join(text.split())
    assert "".join(busy_probe.split()) in flat and "".join(sweep_words.split()) in flat


def test_only_probes_keep_the_probe_verdict():
    a = parse_answers(CPU)
    rec = recommend(a, None, K, with_flips=False)
    md = build_markdown(a, None, rec, [_probe(rec.top.engine, 300.0)], K, "en")
    assert "confirms the advice" in md and "Concluded from" not in md


TOP = recommend(parse_answers(CPU), None, K, with_flips=False).top.engine  # the headline speaks of it


def _page(results, sweeps, lang="en"):
    """The Probe page's verdict (page_verdict) from what it shows: runs (None without), sweeps (None without)."""
    a = parse_answers(CPU)
    rec = recommend(a, None, K, lang=lang, with_flips=False)
    top = rec.top.engine if rec.top else None
    v = revisit(rec, results, 1000.0, lang, labels=[f"#{i} {r.engine}" for i, r in enumerate(results, 1)],
                knowledge=K) if results else None
    cap = check_capacity(sweeps, 4, top, K, lang) if sweeps else None
    return page_verdict(v, cap, sweeps, 4, top, K, lang, ranked=[r.engine for r in rec.ranking]), v, cap, rec


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_probe_page_draws_one_conclusion_for_a_busy_probe_and_a_sweep(lang):
    """Walk-3 M8 on the page: one conclusion, the sweep's, with the busy run cited as not counted; the sweeps'
    section points at it instead of drawing its own summary or lines."""
    view, v, cap, _ = _page([_probe(TOP, 8428.0, busy=True)], [_sweep(TOP, ["inconclusive"])], lang)
    assert view.reconciled and len(view.engines) == 1
    (e,) = view.engines
    assert e.by == "sweep" and e.outcome == "inconclusive" and e.text.startswith(K.s("concl_by_sweep", lang, levels=1,
                                                                                      n="20", text=""))
    held = next(x.held for x in v.engines if x.engine == TOP)
    assert held and e.cited == [K.s("concl_probe_not_counted", lang, run=f"#1 {TOP}", why=held)]
    assert view.headline != v.summary and view.headline != cap.summary
    assert view.sweep_lines == [] and view.sweep_lead == K.s("concl_see_verdict", lang, title=K.s("ui_verdict", lang))
    said = " ".join([view.headline, e.text, *e.cited])
    assert "revisit the hardware" not in said and "请重新考虑硬件" not in said


def test_the_page_tone_follows_the_reconciled_conclusion():
    meets, *_ = _page([_probe(TOP, 300.0)], [_sweep(TOP, ["meets", "meets", "meets"])])
    assert meets.tone == "success" and meets.headline == K.s("concl_sum_confirmed", "en", engine=K.engines[TOP].name,
                                                             how=K.s("concl_how_sweep", "en"))
    misses, *_ = _page([_probe(TOP, 300.0)], [_sweep(TOP, ["misses"])])
    (e,) = misses.engines
    assert e.outcome == "misses" and "contradicts it" in e.cited[0] and misses.tone == "error"
    held, *_ = _page([_probe(TOP, 8428.0, busy=True)], [_sweep(TOP, ["misses"], busy=True)])
    assert held.engines[0].by == "none" and held.tone == "warning"


def test_with_runs_only_the_page_keeps_the_probe_verdict():
    view, v, _, _ = _page([_probe(TOP, 300.0)], [])
    assert not view.reconciled and view.headline == v.summary and view.sweep_lead is None
    assert [e.text for e in view.engines] == [x.text for x in v.engines if x.measured or x.failed]


def test_with_sweeps_only_the_sweeps_section_keeps_its_summary_and_lines():
    view, _, cap, rec = _page([], [_sweep(TOP, ["meets", "meets", "meets"])])
    assert view.headline is None and not view.reconciled and view.engines == []
    assert view.sweep_lead == cap.summary and view.sweep_lines == cap.lines
    assert view.sweep_tone == "success" and rec.top.engine == TOP


def test_an_engines_other_sweeps_are_cited_under_its_one_conclusion():
    """Two sweeps of one engine: the latest that ran decides; the other is cited as not counted, so the page can
    drop the sweeps' own lines and lose none."""
    sweeps = [_sweep(TOP, ["misses"]), _sweep(TOP, ["meets", "meets", "meets"]),
              _sweep(TOP, ["meets"], busy=True)]
    view, _, cap, _ = _page([_probe(TOP, 300.0)], sweeps)
    (e,) = view.engines
    assert e.by == "sweep" and e.outcome == "meets" and cap.lines[1] in e.text
    assert e.cited[1] == K.s("concl_sweep_other", "en", text=cap.lines[0])
    assert e.cited[2] == K.s("concl_sweep_not_counted", "en", why=cap.rows[2].held)
    assert len(e.cited) == 3


def test_the_conclusions_say_their_status():
    c, _ = _conclude([_probe(TOP, 300.0)], [_sweep(TOP, ["meets", "meets", "meets"])])
    assert c.status == "confirmed"
    c, _ = _conclude([_probe(TOP, 8428.0, busy=True)], [_sweep(TOP, ["misses"], busy=True)])
    assert c.status == "held"
