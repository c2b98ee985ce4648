"""Probe results kept in a small SQLite file in the user data dir, so reloads and reruns lose nothing."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from probes.result import ProbeResult


def db_path() -> Path:
    env = os.environ.get("INFERENCE_ADVISOR_DATA")
    if env:
        d = Path(env)
    else:
        from platformdirs import user_data_dir

        d = Path(user_data_dir("inference-advisor"))
    d.mkdir(parents=True, exist_ok=True)
    return d / "probes.sqlite3"


def _conn(path: Path | None = None) -> sqlite3.Connection:
    c = sqlite3.connect(path or db_path(), timeout=10)
    c.execute("CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL, "
              "engine TEXT, status TEXT, result TEXT)")
    return c


def save(result: ProbeResult, path: Path | None = None) -> int:
    import time

    with _conn(path) as c:
        cur = c.execute("INSERT INTO runs (created, engine, status, result) VALUES (?, ?, ?, ?)",
                        (time.time(), result.engine, result.status, result.model_dump_json()))
        return int(cur.lastrowid)


def list_runs(limit: int = 50, path: Path | None = None) -> list[tuple[int, float, ProbeResult]]:
    with _conn(path) as c:
        rows = c.execute("SELECT id, created, result FROM runs ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
    out = []
    for rid, created, blob in rows:
        try:
            out.append((rid, created, ProbeResult.model_validate_json(blob)))
        except ValueError:
            continue  # a row from an incompatible version: skip, don't crash the page
    return out
