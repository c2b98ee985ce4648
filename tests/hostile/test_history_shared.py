"""The probe history is shared state: another program's transaction, a full disk, a server killed mid-sweep, a
pick older than the newest 50 and a data dir that is a file. A busy database is not a broken one (it is never
moved aside, and the other program's commit lands); a full disk moves nothing; only garbage is moved aside."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.evidence import history
from probes.result import Percentiles, ProbeResult, ProbeSettings, RequestRecord

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERENCE_ADVISOR_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(history, "NOTICES", [])
    monkeypatch.setattr(history, "_MARKED", set())  # each test is a fresh server process


def _ok(engine: str = "llama.cpp", c: int = 1) -> ProbeResult:
    rec = [RequestRecord(index=0, submitted_s=0.0, first_token_s=0.05, token_times_s=[0.05, 0.06], finished_s=0.06)]
    return ProbeResult(engine=engine, status="ok", requests_total=20, requests_ok=20, device="cpu",
                       settings=ProbeSettings(engine=engine, concurrency=c), ttft_ms=Percentiles(p50=50.0, p95=60.0),
                       itl_ms=Percentiles(p50=10.0, p95=12.0), output_tps_total=88.0, goodput=1.0,
                       ttft_target_ms=1000.0, requests=rec)


def _broken(data: Path) -> list[str]:
    return sorted(p.name for p in data.iterdir() if ".broken-" in p.name)


HOLDER = textwrap.dedent("""
    import sqlite3, sys, time
    c = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
    c.execute("BEGIN EXCLUSIVE")
    c.execute("INSERT INTO runs (created, engine, status, result) VALUES (?, 'other', 'ok', ?)",
              (time.time(), sys.argv[3]))
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    c.execute("COMMIT")
    print("committed", flush=True)
""")


def _hold(db: Path, seconds: float) -> subprocess.Popen:
    """Another program: it holds an exclusive transaction with a row of its own for `seconds`, then commits."""
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(seconds), _ok("other").model_dump_json()],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked", p.stderr.read()
    return p


def test_a_busy_history_says_busy_moves_nothing_and_the_other_commit_lands(monkeypatch, tmp_path):
    monkeypatch.setattr(history, "BUSY_TIMEOUT_S", 1.0)  # the default is 5 s; the wait is the same code
    mine = history.save(_ok())
    db = history.db_path()
    holder = _hold(db, 3.0)
    t0 = time.monotonic()
    with pytest.raises(history.HistoryError) as err:
        history.save(_ok())
    waited = time.monotonic() - t0
    print(f"busy: save waited {waited:.2f} s")
    msg = str(err.value)
    assert "busy" in msg and "try again" in msg and "\n" not in msg, msg
    assert 0.9 <= waited < 10, waited  # it waited for the other program, then gave up
    out, errs = holder.communicate(timeout=30)
    assert holder.returncode == 0 and "committed" in out, errs  # not "disk I/O error": its file was not moved
    assert _broken(db.parent) == []
    engines = {r.engine for _, _, r in history.list_runs()}
    assert engines == {"llama.cpp", "other"} and mine in {rid for rid, _, _ in history.list_runs()}
    assert history.save(_ok()) > mine  # and once it is free, it is written again


def test_a_busy_rollback_journal_history_reads_empty_with_a_busy_notice(monkeypatch, tmp_path):
    """A database another program keeps in rollback-journal mode, held exclusively: a read waits, then is empty
    with a notice that says busy, never "moved"."""
    monkeypatch.setattr(history, "BUSY_TIMEOUT_S", 1.0)
    db = tmp_path / "data" / "probes.sqlite3"
    db.parent.mkdir()
    with sqlite3.connect(db) as c:
        c.execute(history.SCHEMA)
        c.execute(history.SWEEP_SCHEMA.replace(", status TEXT DEFAULT 'done'", ""))  # a database from before
        c.execute("INSERT INTO runs (created, engine, status, result) VALUES (1, 'llama.cpp', 'ok', ?)",
                  (_ok().model_dump_json(),))
    holder = _hold(db, 3.0)
    t0 = time.monotonic()
    assert history.list_runs() == []
    print(f"busy read: waited {time.monotonic() - t0:.2f} s")
    notes = " ".join(history.NOTICES)
    assert "busy" in notes and "moved" not in notes, notes
    out, errs = holder.communicate(timeout=30)
    assert holder.returncode == 0 and "committed" in out, errs
    assert _broken(db.parent) == []
    assert {r.engine for _, _, r in history.list_runs()} == {"llama.cpp", "other"}  # both rows, migrated
    assert {row[1] for row in sqlite3.connect(db).execute("PRAGMA table_info(sweeps)")} >= {"status"}


def test_garbage_bytes_are_moved_aside_and_the_history_works(tmp_path):
    db = history.db_path()
    db.write_bytes(b"this is not a database" * 100)
    rid = history.save(_ok())
    assert [r for r, _, _ in history.list_runs()] == [rid]
    assert len(_broken(db.parent)) == 1 and any("moved to" in n for n in history.NOTICES)


def _max_pages(monkeypatch, pages: int | None = None):
    """Every connection may grow the file to `pages` pages (None: the size it has): a disk that is full."""
    real = sqlite3.connect

    def connect(*a, **kw):
        c = real(*a, **kw)
        n = pages if pages is not None else c.execute("PRAGMA page_count").fetchone()[0]
        c.execute(f"PRAGMA max_page_count = {max(1, n)}")
        return c

    monkeypatch.setattr(history.sqlite3, "connect", connect)


def test_a_full_disk_on_a_new_history_says_disk_full_and_moves_nothing(monkeypatch, tmp_path):
    _max_pages(monkeypatch, 1)
    db = history.db_path()
    for _ in range(3):  # every try: the same one line, and no .broken-* file piles up
        with pytest.raises(history.HistoryError) as err:
            history.save(_ok())
        assert "disk full" in str(err.value) and "\n" not in str(err.value), err.value
        assert history.list_runs() == []
    assert _broken(db.parent) == []
    assert not any("moved" in n for n in history.NOTICES), history.NOTICES


def test_a_full_disk_on_a_used_history_keeps_every_run(monkeypatch, tmp_path):
    kept = [history.save(_ok()) for _ in range(3)]
    _max_pages(monkeypatch)
    big = _ok().model_copy(update={"reason": "x" * 200_000})
    with pytest.raises(history.HistoryError) as err:
        history.save(big)
    assert "disk full" in str(err.value), err.value
    assert sorted(r for r, _, _ in history.list_runs()) == kept
    assert _broken(history.db_path().parent) == []


def _sweep_rows(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT id, grp, status FROM sweeps ORDER BY id").fetchall()


def test_a_sweep_row_is_written_at_start_updated_per_level_and_done_at_the_end(monkeypatch):
    import probes.jobs as jobs

    history.mark_interrupted()  # the server's start: nothing to mark yet
    gate, at_level = threading.Event(), {}

    def fake_probe(s, on_event=None, cancel=None):
        if s.concurrency == 2:  # the second level waits: the row must then hold the first
            at_level[2] = history.list_sweeps()
            gate.wait(10)
        return _ok(c=s.concurrency)

    monkeypatch.setattr(jobs, "run_probe", fake_probe)
    board = jobs.JobBoard()
    job = board.start([ProbeSettings(engine="llama.cpp", ttft_target_ms=1000.0)], on_result=history.save,
                      sweep={"levels": [1, 2, 4]}, on_sweep=history.save_sweep)
    for _ in range(200):
        if 2 in at_level:
            break
        time.sleep(0.05)
    (sid, grp, sw), = at_level[2]
    assert sw.status == "running" and [lv.concurrency for lv in sw.levels] == [1] and len(sw.run_ids) == 1
    assert history.mark_interrupted() == 0  # a later call in this process never marks its own running sweep
    assert _sweep_rows(history.db_path())[0][2] == "running"
    gate.set()
    assert job.finished.wait(10) and not job.save_errors
    rows = _sweep_rows(history.db_path())
    assert rows == [(sid, grp, "done")]  # the same row, now ended
    (_, _, done), = history.get_sweeps([grp])
    assert done.status == "ok" and [lv.concurrency for lv in done.levels] == [1, 2, 4] and done.capacity == 4


SERVER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1])
    import probes.jobs as jobs
    from advisor.evidence import history
    from tests.hostile.test_history_shared import _ok
    from probes.result import ProbeSettings

    def fake_probe(s, on_event=None, cancel=None):
        if s.concurrency == 2:
            print("level2", flush=True)
            time.sleep(120)
        return _ok(c=s.concurrency)

    jobs.run_probe = fake_probe
    job = jobs.JobBoard().start([ProbeSettings(engine="llama.cpp", ttft_target_ms=1000.0)], on_result=history.save,
                                sweep={"levels": [1, 2, 4]}, on_sweep=history.save_sweep)
    print(job.group, flush=True)
    job.finished.wait()
""")


def test_a_server_killed_mid_sweep_leaves_an_interrupted_sweep_with_its_levels(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", SERVER, str(ROOT)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=str(ROOT), start_new_session=True)
    try:
        lines = [p.stdout.readline().strip() for _ in range(2)]
    finally:
        os.killpg(p.pid, signal.SIGKILL)  # the server dies during its second level
        p.wait(10)
    group = next(ln for ln in lines if ln.startswith("job-"))
    assert "level2" in lines, p.stderr.read()
    db = history.db_path()
    assert [r[2] for r in _sweep_rows(db)] == ["running"]
    # the next server: its first page that reads the history marks the sweep, and the report says so
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["report_sweeps"] = [group]
    at.run()
    at.switch_page("pages/5_Report.py").run(timeout=120)
    assert not at.exception, at.exception
    assert [r[2] for r in _sweep_rows(db)] == ["interrupted"]
    (_, _, sw), = history.get_sweeps([group])
    assert sw.status == "interrupted" and [lv.concurrency for lv in sw.levels] == [1] and sw.capacity is None
    assert any("interrupted" in w.value and "1 level" in w.value for w in at.warning), [w.value for w in at.warning]
    assert any("interrupted after 1 level" in m.value for m in at.markdown)  # the report's table says why it stopped


def test_a_picked_run_older_than_the_newest_50_stays_in_the_report():
    ids = [history.save(_ok("onnxruntime" if i == 0 else "llama.cpp")) for i in range(60)]
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["runs"] = str(ids[0])
    at.run()
    at.switch_page("pages/5_Report.py").run(timeout=120)
    assert not at.exception, at.exception
    keys = [b.key for b in at.get("download_button")]
    assert f"dl_json_r{ids[0]}" in keys, keys
    assert any(f"#{ids[0]} onnxruntime" in m.value for m in at.markdown)


def test_a_data_dir_that_is_a_file_is_one_line_naming_the_variable(tmp_path, monkeypatch):
    f = tmp_path / "not-a-dir"
    f.write_text("x")
    monkeypatch.setenv("INFERENCE_ADVISOR_DATA", str(f))
    with pytest.raises(history.HistoryError) as err:
        history.db_path()
    assert str(err.value) == f"INFERENCE_ADVISOR_DATA={f} is a file, not a directory"
    with pytest.raises(history.HistoryError, match="is a file, not a directory"):
        history.save(_ok())
    assert history.list_runs() == [] and history.mark_interrupted() == 0
    monkeypatch.setenv("INFERENCE_ADVISOR_DATA", str(f / "sub"))  # under a file: one line too
    with pytest.raises(history.HistoryError, match="INFERENCE_ADVISOR_DATA="):
        history.db_path()


@pytest.mark.parametrize("page", ["pages/4_Probe.py", "pages/5_Report.py"], ids=["probe", "report"])
def test_a_data_dir_that_is_a_file_is_a_page_message(tmp_path, monkeypatch, page):
    f = tmp_path / "not-a-dir"
    f.write_text("x")
    monkeypatch.setenv("INFERENCE_ADVISOR_DATA", str(f))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(page).run(timeout=120)
    assert not at.exception, at.exception
    notes = [w.value for w in [*at.warning, *at.error]]
    assert any(f"INFERENCE_ADVISOR_DATA={f} is a file, not a directory" in n for n in notes), notes
    assert f.read_text() == "x"


def test_a_sweep_over_a_busy_history_is_said_once_and_stays_downloadable(monkeypatch):
    """The Probe page after a sweep whose every save met a busy history: the busy line once, and the sweep and
    each level's result as JSON downloads (nothing measured is lost)."""
    import probes.jobs as jobs
    from ui import probe_board

    monkeypatch.setattr(history, "BUSY_TIMEOUT_S", 0.2)
    history.save(_ok())
    holder = _hold(history.db_path(), 4.0)
    monkeypatch.setattr(jobs, "run_probe", lambda s, on_event=None, cancel=None: _ok(c=s.concurrency))
    job = probe_board().start([ProbeSettings(engine="llama.cpp", ttft_target_ms=1000.0)], on_result=history.save,
                              sweep={"levels": [1, 2]}, on_sweep=history.save_sweep)
    assert job.finished.wait(30)
    assert job.save_errors and all("busy" in e for e in job.save_errors), job.save_errors
    holder.communicate(timeout=30)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.session_state["watch_job"] = job.id
    at.switch_page("pages/4_Probe.py").run(timeout=120)
    assert not at.exception, at.exception
    busy = [e.value for e in at.error if "busy" in e.value]
    assert len(busy) == len(set(job.save_errors)) <= 2, busy  # the runs' line and the sweep's, not one per level
    keys = {b.key for b in at.get("download_button")}
    assert {f"dl_unsaved_{job.id}_0", f"dl_unsaved_{job.id}_1", f"dl_unsaved_sweep_{job.id}_0"} <= keys, keys
    assert _broken(history.db_path().parent) == []
