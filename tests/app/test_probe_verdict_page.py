"""The Probe page draws one conclusion per engine (walk-3 M8): a busy probe run of an engine and its sweep are shown
as the sweep's one conclusion, under the verdict, with the busy run cited under it as not counted; the sweeps'
section points at the verdict instead of drawing a summary of its own, and the run's and sweep's own tables stay.
In en and zh. The run and the sweep are recorded ones, seeded into this test's own history: no engine runs."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.knowledge import load_knowledge
from probes.result import Percentiles, ProbeResult, ProbeSettings, SystemLoad
from probes.sweep_result import SweepLevel, SweepResult

K = load_knowledge()
GROUP = "job-1-1764900000"


def _seed() -> int:
    """A busy llama.cpp probe run that misses the target (the walk's 8.4 s p95 while two cores were loaded) and a
    quiet sweep of it whose one level is inconclusive, saved to the history; the run's id."""
    from advisor.evidence import history

    run = ProbeResult(engine="llama.cpp", status="ok", device="cpu", model="m.gguf", goodput=0.0,
                      output_tps_total=1.9, ttft_ms=Percentiles(p50=4000.0, p95=8428.0, p99=8500.0), serving="test",
                      requests_total=8, requests_ok=8, ttft_target_ms=1000,
                      system_load=SystemLoad(busy=True, other_processes_cpu_percent=70.0),
                      settings=ProbeSettings(engine="llama.cpp", concurrency=1, requests=8))
    level = SweepLevel(concurrency=1, status="ok", requests_total=20, requests_ok=20, outcome="inconclusive",
                       ttft_ms=Percentiles(p95=990.0), ttft_p95_ci_ms=[900.0, 1100.0], goodput=1.0,
                       other_cpu_percent=1.0, output_tps_total=5.0)
    sweep = SweepResult(engine="llama.cpp", status="ok", device="cpu", model="m.gguf", ttft_target_ms=1000,
                        levels=[level], capacity=None, inconclusive_at=1, stop={"key": "all"}, stop_reason="test")
    rid = history.save(run)
    history.save_sweep(sweep, GROUP)
    return rid


def _page(lang: str, rid: int) -> AppTest:
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=90)
    at.query_params["lang"] = lang
    at.query_params["runs"] = str(rid)
    at.query_params["sw"] = GROUP
    at.run()
    at.switch_page("pages/4_Probe.py").run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_busy_probe_and_a_sweep_of_one_engine_give_one_conclusion(lang):
    rid = _seed()
    at = _page(lang, rid)
    s = lambda key, **kw: K.s(key, lang, **kw)  # noqa: E731
    assert [h.value for h in at.subheader].count(s("ui_verdict")) == 1
    lines = [m.value for m in at.markdown if m.value.startswith("- **llama.cpp**")]
    assert len(lines) == 1, lines  # one conclusion for the engine, not the run's verdict beside the sweep's
    line = lines[0]
    head, *cited = line.split("\n    - ")
    assert head.startswith("- **llama.cpp**" + s("colon") + s("concl_by_sweep", levels=1, n="20", text="").strip())
    assert s("cap_line_inconclusive", engine="llama.cpp", ms="1000", c=1, asked=1) in head  # the sweep's words
    assert len(cited) == 1 and cited[0].startswith(s("concl_probe_not_counted", run=f"#{rid} llama.cpp", why=""))
    # the busy run decides nothing: no "revisit the hardware", and the sweeps' section draws no summary of its own
    alerts = [x.value for kind in ("success", "warning", "error", "info") for x in getattr(at, kind)]
    said = " ".join(alerts + [m.value for m in at.markdown] + [c.value for c in at.caption])
    assert "revisit the hardware" not in said and "请重新考虑硬件" not in said
    assert s("cap_sum_inconclusive") not in said
    assert s("concl_see_verdict", title=s("ui_verdict")) in [c.value for c in at.caption]
    # the headline is the reconciled one (the engine's one conclusion), never the busy run's own
    heads = [s("concl_sum_inconclusive", engine="llama.cpp", how=s("concl_how_sweep")), s("concl_sum_unmeasured")]
    assert len([a for a in alerts if a in heads]) == 1, alerts  # unmeasured where another engine leads here
    assert not any("70%" in a for a in alerts)  # the run's "measured on a busy machine (… 70% …)" is no headline
    # each run's own details stay: the run in the runs' table, the sweep in the sweeps' table
    tables = [d.value for d in at.dataframe]
    assert any(f"#{rid} llama.cpp" in t.iloc[:, 0].tolist() for t in tables)
    assert any(t.columns[0] == s("cap_cols").split("|")[0] and "llama.cpp" in t.iloc[:, 0].tolist() for t in tables)
