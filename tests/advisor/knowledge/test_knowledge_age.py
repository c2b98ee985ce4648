"""Knowledge states its age (issue 20): every engine names the release its facts describe, the Recommendation page
and the report say "knowledge as of DATE: vLLM X, SGLang Y, …", and `python -m advisor knowledge --check` lists
the cells, rules and releases read more than 180 days ago."""
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.knowledge import ENGINE_IDS, age, load_knowledge

K = load_knowledge()
ROOT = Path(__file__).resolve().parents[3]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", "knowledge", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_every_engine_names_the_release_its_facts_describe():
    asof = age.as_of(K)
    assert [e.engine for e in asof.engines] == list(ENGINE_IDS)
    for e in asof.engines:
        assert e.version and e.read, e
        dt.date.fromisoformat(e.read)
    assert asof.date == max(e.read for e in asof.engines)
    line = asof.line(K, "en")
    assert line.startswith(f"Knowledge as of {asof.date}: vLLM ") and "SGLang " in line
    assert asof.line(K, "zh").startswith(f"知识截至 {asof.date}：")


def test_every_rule_and_cell_is_dated_and_nothing_is_stale_today():
    undated = [d for d in age.dated(K) if d.read is None]
    assert not undated, undated[:5]
    newest = max(d.read for d in age.dated(K))
    assert age.stale(K, newest) == []


def test_check_lists_what_is_older_than_the_limit_and_exits_1():
    newest = max(d.read for d in age.dated(K))
    later = newest + dt.timedelta(days=181)
    out = _cli("--check", "--today", later.isoformat(), "--format", "json")
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    stale = data["check"]["stale"]
    files = {s["file"] for s in stale}
    assert {"support.yaml", "rules.yaml", "engines.yaml"} <= files
    assert all(s["read"] and dt.date.fromisoformat(s["read"]) < later - dt.timedelta(days=180) for s in stale)
    assert any(s["item"].startswith("sglang: ") for s in stale)
    text = _cli("--check", "--today", later.isoformat())
    assert text.returncode == 1 and "older than 180 days" in text.stdout
    fresh = _cli("--check", "--today", newest.isoformat())
    assert fresh.returncode == 0 and "were read within 180 days" in fresh.stdout, fresh.stdout


def test_the_limit_is_a_choice():
    newest = max(d.read for d in age.dated(K))
    tight = _cli("--check", "--days", "1", "--today", (newest + dt.timedelta(days=2)).isoformat(), "--format", "json")
    assert tight.returncode == 1 and json.loads(tight.stdout)["check"]["days"] == 1


@pytest.mark.parametrize("args, said", [(["--days", "x"], "not a whole number"), (["--days", "0"], "between 1"),
                                        (["--today", "yesterday"], "not a date")])
def test_bad_arguments_exit_2_with_one_line(args, said):
    out = _cli("--check", *args)
    assert out.returncode == 2 and said in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr


def test_the_report_says_the_age(tmp_path):
    answers = tmp_path / "a.yaml"
    answers.write_text("concurrency: 8\n", encoding="utf-8")
    md = tmp_path / "r.md"
    subprocess.run([sys.executable, "-m", "advisor", "report", "--answers", str(answers), "--out", str(md)],
                   cwd=ROOT, check=True, capture_output=True, timeout=120)
    assert age.as_of(K).line(K, "en").split(" (")[0].replace("*", "") in md.read_text(encoding="utf-8")
