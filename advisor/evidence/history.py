"""Probe results kept in a small SQLite file in the user data dir, so reloads and reruns lose nothing.

The file is shared state: the server, a second server, the CLI or the user's own sqlite3 may hold it at once.
So it is opened in WAL mode with a busy timeout, and only a database that is not ours (not a database, corrupt,
another program's schema) is moved aside with a message and a new one started. A busy one waits, then says so
(the caller keeps the result); a full disk says so and moves nothing. Each call opens and closes its own
connection. A sweep's row is written when it starts and updated per level, so a server killed mid-sweep leaves
a row that the next server start marks "interrupted".
"""
from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

from probes.result import ProbeResult
from probes.sweep_result import SweepResult

SCHEMA = ("CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL, "
          "engine TEXT, status TEXT, result TEXT)")
SWEEP_SCHEMA = ("CREATE TABLE IF NOT EXISTS sweeps (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL, "
                "grp TEXT, engine TEXT, result TEXT, status TEXT DEFAULT 'done')")
COLUMNS = {"id", "created", "engine", "status", "result"}
SWEEP_COLUMNS = {"id", "created", "grp", "engine", "result"}  # `status` is added to a database from before it
MAX_RESULT_BYTES = 16 * 2**20  # a row larger than this was not written by us
BUSY_TIMEOUT_S = 5.0  # how long a call waits for another program's transaction before it says "busy"
SWEEP_STATUSES = ("running", "done", "interrupted")  # a sweep row's life: written at start, done at the end


class HistoryError(RuntimeError):
    """The history cannot be written; str() is one line."""


class _Foreign(sqlite3.DatabaseError):
    """The file is a database, of another program's schema."""


NOTICES: list[str] = []  # what happened to an unusable database, for the UI to show once


def db_path(create: bool = True) -> Path:
    """The database file; HistoryError (one line, naming the variable) when its folder cannot be one."""
    from probes.cache import data_dir

    d, named = data_dir()
    if d.exists() and not d.is_dir():
        raise HistoryError(f"{named} is a file, not a directory")
    if create:
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as err:  # a parent is a file, or no permission
            raise HistoryError(f"{named} cannot be created as a directory: {err.strerror or err}") from None
    return d / "probes.sqlite3"


def _kind(err: sqlite3.Error) -> str:
    """busy | full | broken | readonly | cantopen | other: what an SQLite error says about the file (by its
    code on Python 3.11+, by its words before)."""
    if isinstance(err, _Foreign):
        return "broken"
    name = getattr(err, "sqlite_errorname", "") or ""
    msg = str(err).lower()
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "is locked" in msg or "database is busy" in msg:
        return "busy"
    if name.startswith("SQLITE_FULL") or "database or disk is full" in msg:
        return "full"
    if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")) or "not a database" in msg or "malformed" in msg:
        return "broken"
    if name.startswith("SQLITE_READONLY") or "readonly" in msg:
        return "readonly"
    if name.startswith("SQLITE_CANTOPEN") or "unable to open" in msg:
        return "cantopen"
    return "other"


def _error(p: Path, err: sqlite3.Error, what: str | None = None) -> HistoryError:
    """The one line for an SQLite error that leaves the file where it is."""
    kind = _kind(err)
    lead = f"the {what} could not be saved: " if what else ""
    if kind == "busy":
        return HistoryError(f"{lead}the probe history {p} is busy (another program holds it); try again")
    if kind == "full":
        return HistoryError(f"{lead}the probe history {p} cannot grow: the disk is full (disk full); free some "
                            "space and try again")
    if kind in ("readonly", "cantopen"):
        return HistoryError(f"{lead}the probe history {p} cannot be written: {err}")
    return HistoryError(f"{lead}the probe history {p} cannot be used: {err}")


def _move_aside(path: Path, why: str) -> None:
    dest = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        path.replace(dest)
        for side in ("-wal", "-shm"):  # a stale log beside a new database would be replayed into it
            if path.with_name(path.name + side).exists():
                path.with_name(path.name + side).replace(dest.with_name(dest.name + side))
        NOTICES.append(f"the probe history {path} could not be used ({why}); it was moved to {dest.name} and a "
                       "new one was started")
    except OSError as err:
        raise HistoryError(f"the probe history {path} cannot be used ({why}) nor moved aside ({err.strerror})") \
            from None


def _connect(p: Path) -> sqlite3.Connection:
    c = sqlite3.connect(p, timeout=BUSY_TIMEOUT_S)
    try:
        c.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        try:
            c.execute("PRAGMA journal_mode = WAL")  # readers never wait for a writer; kept in the file
        except sqlite3.OperationalError as err:
            if _kind(err) not in ("readonly", "cantopen"):  # a read-only file is still read as it is
                raise
        names = {row[0] for row in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "runs" not in names or "sweeps" not in names:
            with c:
                c.execute(SCHEMA)
                c.execute(SWEEP_SCHEMA)
        cols = {row[1] for row in c.execute("PRAGMA table_info(runs)")}
        if not COLUMNS <= cols:
            raise _Foreign(f"table 'runs' has other columns: {', '.join(sorted(cols))}")
        cols = {row[1] for row in c.execute("PRAGMA table_info(sweeps)")}
        if not SWEEP_COLUMNS <= cols:
            raise _Foreign(f"table 'sweeps' has other columns: {', '.join(sorted(cols))}")
        if "status" not in cols:  # a database from before sweeps had a status: every sweep in it ended
            with c:
                c.execute("ALTER TABLE sweeps ADD COLUMN status TEXT DEFAULT 'done'")
    except BaseException:
        c.close()
        raise
    return c


def _open(path: Path | None = None, retry: bool = True) -> sqlite3.Connection:
    p = path or db_path()
    try:
        return _connect(p)
    except sqlite3.Error as err:
        if _kind(err) != "broken":  # busy, full, read-only...: the file is fine, or not ours to move
            raise _error(p, err) from None
        if not retry:
            raise HistoryError(f"the probe history {p} cannot be used: {err}") from None
        _move_aside(p, str(err))
        return _open(path, retry=False)


def _write(sql: str, values: tuple, what: str, path: Path | None) -> sqlite3.Cursor:
    p = path or db_path()
    try:
        with closing(_open(p)) as c, c:
            return c.execute(sql, values)
    except sqlite3.Error as err:
        raise _error(p, err, what) from None


def _insert(sql: str, values: tuple, what: str, path: Path | None) -> int:
    return int(_write(sql, values, what, path).lastrowid)


def _rows(sql: str, params: tuple, model, path: Path | None, adjust=None) -> list[tuple]:
    """(id, the second column, model) per row, in the query's order; `adjust(model, *more columns)` gives the
    model for a query with more columns. Never raises: an unreadable history is an empty one (see NOTICES); a
    row too large, or from an incompatible version, is skipped rather than crash a page."""
    try:
        p = path or db_path()
        with closing(_open(p)) as c:
            rows = c.execute(sql, params).fetchall()
    except HistoryError as err:
        NOTICES.append(str(err))
        return []
    except sqlite3.Error as err:
        NOTICES.append(str(_error(p, err)))
        return []
    out = []
    for rid, second, blob, *more in rows:
        if not isinstance(blob, (str, bytes)) or len(blob) > MAX_RESULT_BYTES:
            continue
        try:
            m = model.model_validate_json(blob)
            out.append((int(rid), second, adjust(m, *more) if adjust else m))
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


def _with_status(sw: SweepResult, status: str | None) -> SweepResult:
    """A sweep as its row's life says: one still running says so, and one whose server stopped during it is
    "interrupted", with the levels it finished (it has no capacity: it cannot change the advice)."""
    if status == "running":
        return sw.model_copy(update={"status": "running"})
    if status == "interrupted":
        n, last = len(sw.levels), (sw.levels[-1].concurrency if sw.levels else None)
        why = f"interrupted: the server stopped during the sweep, after {n} level(s)"
        return sw.model_copy(update={"status": "interrupted", "reason": why, "stop_reason": why, "capacity": None,
                                     "stop": {"key": "interrupted", "n": n, "c": last}})
    return sw


_SWEEP_COLS = "id, grp, result, status"


def get_sweeps(groups: list[str], path: Path | None = None) -> list[tuple[int, str, SweepResult]]:
    """The sweeps of these groups, oldest first, however old."""
    groups = [str(g) for g in groups][:50]
    if not groups:
        return []
    sql = f"SELECT {_SWEEP_COLS} FROM sweeps WHERE grp IN ({','.join('?' * len(groups))}) ORDER BY id"
    return [(sid, str(grp), sw) for sid, grp, sw in _rows(sql, tuple(groups), SweepResult, path, _with_status)]


def save_sweep(sweep: SweepResult, group: str, path: Path | None = None, status: str = "done") -> int:
    """A sweep's summary (its levels' full results are runs of their own, named by `run_ids`); one group per job,
    one sweep per engine in it. Called with status "running" when the sweep starts and after each level, then
    "done": each call updates the group's row of that engine that has not ended, or writes a new one."""
    if status not in SWEEP_STATUSES:
        raise ValueError(f"a sweep row is one of {', '.join(SWEEP_STATUSES)}, not {status!r}")
    blob = sweep.model_copy(update={"results": []}).model_dump_json()
    p = path or db_path()
    try:
        with closing(_open(p)) as c, c:
            row = c.execute("SELECT MAX(id) FROM sweeps WHERE grp = ? AND engine = ? AND status != 'done'",
                            (group, sweep.engine)).fetchone()
            if row and row[0] is not None:
                c.execute("UPDATE sweeps SET result = ?, status = ? WHERE id = ?", (blob, status, row[0]))
                return int(row[0])
            return int(c.execute("INSERT INTO sweeps (created, grp, engine, result, status) VALUES (?, ?, ?, ?, ?)",
                                 (time.time(), group, sweep.engine, blob, status)).lastrowid)
    except sqlite3.Error as err:
        raise _error(p, err, "sweep") from None


def list_sweeps(limit: int = 50, path: Path | None = None) -> list[tuple[int, str, SweepResult]]:
    """Newest first, as (id, group, sweep)."""
    return [(sid, str(grp), sw) for sid, grp, sw in
            _rows(f"SELECT {_SWEEP_COLS} FROM sweeps ORDER BY id DESC LIMIT ?", (limit,), SweepResult, path,
                  _with_status)]


_MARKED: set[str] = set()
_MARK_LOCK = threading.Lock()


def mark_interrupted(path: Path | None = None) -> int:
    """At server start (app.py, before this process's first page that reads the history): the sweeps still
    "running" belong to a server that stopped during them; they are marked "interrupted". Once per process and
    database (a later call could mark this process's own running sweep), never raising, and never creating a
    database that does not exist. The number marked."""
    try:
        p = path or db_path(create=False)
    except HistoryError:
        return 0
    with _MARK_LOCK:  # held while marking: a second first call waits for the first to end
        if str(p) in _MARKED:
            return 0
        _MARKED.add(str(p))
        if not p.is_file():
            return 0
        try:
            return int(_write("UPDATE sweeps SET status = 'interrupted' WHERE status = 'running'", (),
                              "sweeps' state", p).rowcount)
        except HistoryError:  # busy, full, broken: the pages say so when they read it
            return 0
