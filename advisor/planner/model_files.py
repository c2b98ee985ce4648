"""Bounded reading of a user's model files: the only place the planner touches them.

A model file is hostile input like any other: a config.json nested a million deep, a safetensors header
that claims 2^40 bytes, a FIFO or /dev/zero given as the path. Every reader here caps size, depth, count
and time, and raises one error type with one line, so the CLI exits 2 and the pages show a message.
"""
from __future__ import annotations

import json
import math
import os
import stat
import time
from pathlib import Path
from typing import Any


class ModelFileError(ValueError):
    """A model file that cannot be read within bounds; the message is one line."""


MAX_JSON_BYTES = 4 << 20  # config.json and genai_config.json are kilobytes
MAX_INDEX_BYTES = 32 << 20  # model.safetensors.index.json of the largest checkpoints is a few MB
MAX_DIR_ENTRIES = 20_000
MAX_SHARDS = 4_096
READ_BUDGET_S = 10.0  # for one model: the header walk checks this clock


def clip(text: object, limit: int = 80) -> str:
    """A value from a file, safe for one line of error text: repr-escaped and cut."""
    s = repr(text) if not isinstance(text, str) else repr(text)[1:-1]
    return s if len(s) <= limit else s[: limit - 1] + "…"


class Budget:
    """A time box on reading one model (a crafted header must not stall the planner)."""

    def __init__(self, seconds: float = READ_BUDGET_S) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def check(self, what: str) -> None:
        if time.monotonic() > self.end:
            raise ModelFileError(f"reading {what} took longer than {self.seconds:g} s; the header is implausible")


def kind(path: Path) -> str:
    """'file', 'dir' or a refusal: devices, FIFOs and sockets are never opened (a FIFO blocks a reader)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ModelFileError(f"not found: {path}") from None
    except OSError as err:
        raise ModelFileError(f"{path}: cannot read ({err.strerror or type(err).__name__})") from None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    what = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    raise ModelFileError(f"{path} is {what}; give a GGUF file or a model directory")


def regular_files(path: Path) -> list[Path]:
    """The directory's regular files (sorted), refusing a directory too large to be one model."""
    out = []
    try:
        with os.scandir(path) as it:
            for i, entry in enumerate(it):
                if i >= MAX_DIR_ENTRIES:
                    raise ModelFileError(f"{path} holds more than {MAX_DIR_ENTRIES:,} entries; "
                                         "give the model's own directory")
                try:
                    if entry.is_file(follow_symlinks=True) and stat.S_ISREG(entry.stat().st_mode):
                        out.append(Path(entry.path))
                except OSError:
                    continue
    except OSError as err:
        raise ModelFileError(f"{path}: cannot list ({err.strerror or type(err).__name__})") from None
    return sorted(out)


def read_json(path: Path, limit: int = MAX_JSON_BYTES) -> Any:
    """A JSON file, size-capped; deep nesting and bad encodings are one line, never a traceback."""
    if kind(path) != "file":
        raise ModelFileError(f"{path} is a directory, not a JSON file")
    size = path.stat().st_size
    if size > limit:
        raise ModelFileError(f"{path.name} is {size / 2**20:.1f} MB; a model config is at most {limit >> 20} MB")
    with open(path, "rb") as f:
        return parse_json(f.read(limit + 1), path.name, limit)


def parse_json(raw: bytes, name: str, limit: int = MAX_JSON_BYTES) -> Any:
    """JSON bytes from a file or a paste, size-capped; every way they can be broken is one line."""
    if len(raw) > limit:
        raise ModelFileError(f"{name} is {len(raw) / 2**20:.1f} MB; a model config is at most {limit >> 20} MB")
    try:
        return json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ModelFileError(f"{name} is nested too deeply to be a model config") from None
    except UnicodeDecodeError:
        raise ModelFileError(f"{name} is not UTF-8 text") from None
    except ValueError as err:
        raise ModelFileError(f"{name} is not valid JSON ({clip(str(err), 100)})") from None


def read_object(path: Path, limit: int = MAX_JSON_BYTES) -> dict:
    data = read_json(path, limit)
    if not isinstance(data, dict):
        raise ModelFileError(f"{path.name} must hold a JSON object, not a {type(data).__name__}")
    return data


def section(data: dict, key: str, where: str) -> dict:
    """data[key] when it is an object; {} when absent; an error when it is something else."""
    v = data.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ModelFileError(f"{where}: '{clip(key)}' must be an object, not a {type(v).__name__}")
    return v


def count(value: Any, what: str, lo: int = 1, hi: int = 1 << 31) -> int:
    """An integer field of a model header, checked: finite, integral, within [lo, hi]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelFileError(f"{what} must be a whole number, not {clip(value)}")
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        raise ModelFileError(f"{what} must be a whole number, not {clip(value)}")
    n = int(value)
    if not lo <= n <= hi:
        raise ModelFileError(f"{what} = {n:,} is outside the plausible range {lo:,}…{hi:,}")
    return n


def safetensors_params(files: list[Path], budget: Budget) -> int:
    """Parameters in safetensors shards, from their headers only.

    The `safetensors` library parses the header (it caps the header at 100 MB, rejects bad JSON and
    checks every tensor's shape against its byte offsets, so a shape cannot claim more than the file holds).
    """
    from safetensors import SafetensorError, safe_open

    if len(files) > MAX_SHARDS:
        raise ModelFileError(f"{len(files):,} safetensors shards; at most {MAX_SHARDS:,} are read")
    total = 0
    for f in files:
        budget.check(f.name)
        try:
            with safe_open(str(f), framework="numpy") as st:
                for name in st.keys():
                    shape = st.get_slice(name).get_shape()
                    if len(shape) > 8:
                        raise ModelFileError(f"{f.name}: tensor {clip(name)} has {len(shape)} dimensions")
                    total += math.prod(shape)
        except SafetensorError as err:
            raise ModelFileError(f"{f.name}: not a readable safetensors file ({clip(str(err), 120)})") from None
    return total
