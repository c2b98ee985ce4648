"""Probe results kept in a small SQLite file in the user data dir, so reloads and reruns lose nothing.

A database that cannot be used (corrupt, another program's schema, unwritable) is moved aside with a
message and a new one is started; each call opens and closes its own connection.
"""
from __future__ import annotations

import os
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from probes.result import ProbeResult
from probes.sweep_result import SweepResult

SCHEMA = ("CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL, "
          "engine TEXT, status TEXT, result TEXT)")
SWEEP_SCHEMA = ("CREATE TABLE IF NOT EXISTS sweeps (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL, "
                "grp TEXT, engine TEXT, result TEXT)")
COLUMNS = {"id", "created", "engine", "status", "result"}
MAX_RESULT_BYTES = 16 * 2**20  # a row larger than this was not written by us


class HistoryError(RuntimeError):
    """The history cannot be written; str() is one line."""


NOTICES: list[str] = []  # what happened to an unusable database, for the UI to show once


def db_path() -> Path:
    env = os.environ.get("INFERENCE_ADVISOR_DATA")
    if env:
        d = Path(env)
    else:
        from platformdirs import user_data_dir

        d = Path(user_data_dir("inference-advisor"))
    d.mkdir(parents=True, exist_ok=True)
    return d / "probes.sqlite3"


def _move_aside(path: Path, why: str) -> None:
    dest = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        path.replace(dest)
        NOTICES.append(f"the probe history {path} could not be used ({why}); it was moved to {dest.name} and a "
                       "new one was started")
    except OSError as err:
        raise HistoryError(f"the probe history {path} cannot be used ({why}) nor moved aside ({err.strerror})") \
            from None


def _open(path: Path | None = None, retry: bool = True) -> sqlite3.Connection:
    p = path or db_path()
    try:
        c = sqlite3.connect(p, timeout=10)
        try:
            c.execute(SCHEMA)
            c.execute(SWEEP_SCHEMA)
            cols = {row[1] for row in c.execute("PRAGMA table_info(runs)")}
            if not COLUMNS <= cols:
                raise sqlite3.DatabaseError(f"table 'runs' has other columns: {', '.join(sorted(cols))}")
        except sqlite3.Error:
            c.close()
            raise
        return c
    except sqlite3.OperationalError as err:
        if "readonly" in str(err) or "unable to open" in str(err):
            raise HistoryError(f"the probe history {p} cannot be written: {err}") from None
        if not retry:
            raise HistoryError(f"the probe history {p} cannot be used: {err}") from None
        _move_aside(p, str(err))
        return _open(path, retry=False)
    except sqlite3.DatabaseError as err:
        if not retry:
            raise HistoryError(f"the probe history {p} cannot be used: {err}") from None
        _move_aside(p, str(err))
        return _open(path, retry=False)


def _insert(sql: str, values: tuple, what: str, path: Path | None) -> int:
    try:
        with closing(_open(path)) as c, c:
            return int(c.execute(sql, values).lastrowid)
    except sqlite3.Error as err:
        raise HistoryError(f"the {what} could not be saved: {err}") from None


def _rows(sql: str, params: tuple, model, path: Path | None) -> list[tuple]:
    """(id, the second column, model) per row, in the query's order. Never raises: an unreadable history is an empty
    one (see NOTICES); a row too large, or from an incompatible version, is skipped rather than crash a page."""
    try:
        with closing(_open(path)) as c:
            rows = c.execute(sql, params).fetchall()
    except (sqlite3.Error, HistoryError) as err:
        NOTICES.append(str(err))
        return []
    out = []
    for rid, second, blob in rows:
        if not isinstance(blob, (str, bytes)) or len(blob) > MAX_RESULT_BYTES:
            continue
        try:
            out.append((int(rid), second, model.model_validate_json(blob)))
        except (ValueError, TypeError):
            continue
    return out


def save(result: ProbeResult, path: Path | None = None) -> int:
    """The new run's id; HistoryError (one line) when it cannot be stored, so the caller keeps the result."""
    return _insert("INSERT INTO runs (created, engine, status, result) VALUES (?, ?, ?, ?)",
                   (time.time(), result.engine, result.status, result.model_dump_json()), "probe result", path)


def list_runs(limit: int = 50, path: Path | None = None) -> list[tuple[int, float, ProbeResult]]:
    """Newest first, as (id, created, result)."""
    return [(rid, float(created or 0), r) for rid, created, r in
            _rows("SELECT id, created, result FROM runs ORDER BY id DESC LIMIT ?", (limit,), ProbeResult, path)]


def get_runs(ids: list[int], path: Path | None = None) -> dict[int, ProbeResult]:
    """The runs with these ids, however old (a pick is never dropped because newer runs came after it)."""
    ids = [int(i) for i in ids][:200]
    if not ids:
        return {}
    sql = f"SELECT id, created, result FROM runs WHERE id IN ({','.join('?' * len(ids))})"
    return {rid: r for rid, _, r in _rows(sql, tuple(ids), ProbeResult, path)}


def get_sweeps(groups: list[str], path: Path | None = None) -> list[tuple[int, str, SweepResult]]:
    """The sweeps of these groups, oldest first, however old."""
    groups = [str(g) for g in groups][:50]
    if not groups:
        return []
    sql = f"SELECT id, grp, result FROM sweeps WHERE grp IN ({','.join('?' * len(groups))}) ORDER BY id"
    return [(sid, str(grp), sw) for sid, grp, sw in _rows(sql, tuple(groups), SweepResult, path)]


def save_sweep(sweep: SweepResult, group: str, path: Path | None = None) -> int:
    """A sweep's summary (its levels' full results are runs of their own, named by `run_ids`); one group per job."""
    return _insert("INSERT INTO sweeps (created, grp, engine, result) VALUES (?, ?, ?, ?)",
                   (time.time(), group, sweep.engine, sweep.model_copy(update={"results": []}).model_dump_json()),
                   "sweep", path)


def list_sweeps(limit: int = 50, path: Path | None = None) -> list[tuple[int, str, SweepResult]]:
    """Newest first, as (id, group, sweep)."""
    return [(sid, str(grp), sw) for sid, grp, sw in
            _rows("SELECT id, grp, result FROM sweeps ORDER BY id DESC LIMIT ?", (limit,), SweepResult, path)]
