"""Read a GGUF file's metadata and tensor shapes without loading it (no engine, no numpy, stdlib only).

One reader for both sides: the planner (advisor.planner.spec) and the probe's context and KV check
(probes.workload) read the same header with the same bounds; it lives in probes because probes may not import
advisor, and advisor may read this module as it reads the probes' result types.

Only the header is read: key/value pairs and the tensor directory. That gives the architecture and the
exact parameter count, which the planner prefers to any formula.

Why not `gguf.GGUFReader` (llama.cpp's own reader, already a dependency): it maps the whole file with numpy
and builds a field object per vocabulary entry. On the bundled 135M model it took 3.0 s (plus 0.34 s to
import) against 0.11 s here, and the pages plan on every rerun. So this reader stays, bounded: counts,
string lengths, array lengths, nesting, dimensions and the time spent are all capped.
"""
from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import Any, BinaryIO

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_MAX_ARRAY_KEEP = 64  # long arrays (the vocabulary) are skipped; their length is kept
MAX_COUNT = 1_000_000  # tensors, metadata keys (the largest real models have a few thousand)
MAX_ARRAY = 1 << 24  # items in one metadata array (vocabularies are ~10^5)
MAX_STRING = 1 << 20  # bytes in one string (chat templates are kilobytes)
MAX_DIMS = 8  # ggml tensors have at most 4
MAX_DIM = 1 << 40
MAX_PARAMS = 1 << 50
READ_BUDGET_S = 10.0


class GgufError(ValueError):
    pass


def _read(f: BinaryIO, n: int) -> bytes:
    b = f.read(n)
    if len(b) != n:
        raise GgufError("file ends inside the GGUF header")
    return b


def _u32(f: BinaryIO) -> int:
    return struct.unpack("<I", _read(f, 4))[0]


def _u64(f: BinaryIO) -> int:
    return struct.unpack("<Q", _read(f, 8))[0]


def _string(f: BinaryIO) -> str:
    n = _u64(f)
    if n > MAX_STRING:
        raise GgufError(f"a GGUF header string claims {n:,} bytes (at most {MAX_STRING:,} are read)")
    return _read(f, n).decode("utf-8", "replace")


class _Clock:
    def __init__(self, seconds: float) -> None:
        self.end, self.seconds, self.ticks = time.monotonic() + seconds, seconds, 0

    def tick(self) -> None:
        self.ticks += 1
        if self.ticks & 0xFFF == 0 and time.monotonic() > self.end:
            raise GgufError(f"reading the GGUF header took longer than {self.seconds:g} s; it is implausible")


def _value(f: BinaryIO, kind: int, clock: _Clock, depth: int = 0) -> Any:
    clock.tick()
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, _read(f, struct.calcsize(fmt)))[0]
    if kind == _STRING:
        return _string(f)
    if kind == _ARRAY:
        if depth >= 2:
            raise GgufError("GGUF metadata arrays nested more than twice")
        item, n = _u32(f), _u64(f)
        if n > MAX_ARRAY:
            raise GgufError(f"a GGUF metadata array claims {n:,} items (at most {MAX_ARRAY:,})")
        if item in _SCALARS and n > _MAX_ARRAY_KEEP:
            f.seek(n * struct.calcsize(_SCALARS[item]), 1)
            return _Skipped(n)
        items = [_value(f, item, clock, depth + 1) for _ in range(n)]
        return items if n <= _MAX_ARRAY_KEEP else _Skipped(n)
    raise GgufError(f"unknown GGUF value type {kind}")


class _Skipped(list):
    """A long array whose items were not kept; len() still answers."""

    def __init__(self, n: int):
        super().__init__()
        self.n = n

    def __len__(self) -> int:
        return self.n


def read_gguf(path: str | Path, budget_s: float = READ_BUDGET_S) -> dict[str, Any]:
    """Metadata dict plus '__params__' (total weights), '__tensors__' (count), '__type_elements__' (weights per
    ggml type id) and '__kind_types__' (the ggml type ids of token_embd.weight and output.weight)."""
    clock = _Clock(budget_s)
    with open(path, "rb") as f:
        if _read(f, 4) != b"GGUF":
            raise GgufError(f"{path}: not a GGUF file (bad magic)")
        version = _u32(f)
        if version not in (2, 3):
            raise GgufError(f"{path}: GGUF version {version} is not one this reader knows (2 or 3)")
        n_tensors, n_kv = _u64(f), _u64(f)
        if n_tensors > MAX_COUNT or n_kv > MAX_COUNT:
            raise GgufError(f"corrupt GGUF header: {n_tensors:,} tensors, {n_kv:,} metadata keys")
        meta: dict[str, Any] = {}
        for _ in range(n_kv):
            key = _string(f)
            meta[key] = _value(f, _u32(f), clock)
        params = 0
        names = set()
        per_type: dict[int, int] = {}
        kinds: dict[str, int] = {}
        for _ in range(n_tensors):
            clock.tick()
            name = _string(f)
            names.add(name)
            n_dims = _u32(f)
            if n_dims > MAX_DIMS:
                raise GgufError(f"a GGUF tensor claims {n_dims:,} dimensions (ggml has at most 4)")
            n = 1
            for _ in range(n_dims):
                d = _u64(f)
                if d > MAX_DIM:
                    raise GgufError(f"a GGUF tensor dimension of {d:,} is implausible")
                n *= d
            ggml_type = _u32(f)
            _u64(f)  # offset
            params += n
            per_type[ggml_type] = per_type.get(ggml_type, 0) + n
            if name in ("token_embd.weight", "output.weight"):
                kinds[name] = ggml_type
            if params > MAX_PARAMS:
                raise GgufError("the GGUF tensor shapes add up to an implausible parameter count")
    meta["__params__"] = params
    meta["__tensors__"] = n_tensors
    meta["__tied__"] = "output.weight" not in names  # no separate LM head: it reuses token_embd
    meta["__type_elements__"] = per_type
    meta["__kind_types__"] = kinds
    return meta


# ggml_type enum (ggml.h) -> the planner's gguf_types ids (knowledge/planner.yaml)
GGML_TYPES = {0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0", 10: "q2_k", 11: "q3_k",
              12: "q4_k", 13: "q5_k", 14: "q6_k", 20: "iq4_nl", 23: "iq4_xs", 30: "bf16"}


# general.file_type -> the planner's precision id (llama.cpp's llama_ftype enum); others plan as "gguf_file"
FILE_TYPES = {0: "fp32", 1: "gguf_f16", 2: "q4_0", 3: "q4_1", 7: "q8_0", 10: "q2_k", 12: "q3_k_m", 14: "q4_k_s",
              15: "q4_k_m", 16: "q5_k_s", 17: "q5_k_m", 18: "q6_k", 30: "iq4_xs", 32: "bf16"}
