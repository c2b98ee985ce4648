"""Read a GGUF file's metadata and tensor shapes without loading it (no engine, no numpy).

Only the header is read: key/value pairs and the tensor directory. That gives the architecture and the
exact parameter count, which the planner prefers to any formula.
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_MAX_ARRAY_KEEP = 64  # long arrays (the vocabulary) are skipped; their length is kept


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
    if n > 1 << 24:
        raise GgufError("implausible string length in GGUF header")
    return _read(f, n).decode("utf-8", "replace")


def _value(f: BinaryIO, kind: int) -> Any:
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, _read(f, struct.calcsize(fmt)))[0]
    if kind == _STRING:
        return _string(f)
    if kind == _ARRAY:
        item, n = _u32(f), _u64(f)
        if item in _SCALARS and n > _MAX_ARRAY_KEEP:
            f.seek(n * struct.calcsize(_SCALARS[item]), 1)
            return _Skipped(n)
        items = [_value(f, item) for _ in range(n)]
        return items if n <= _MAX_ARRAY_KEEP else _Skipped(n)
    raise GgufError(f"unknown GGUF value type {kind}")


class _Skipped(list):
    """A long array whose items were not kept; len() still answers."""

    def __init__(self, n: int):
        super().__init__()
        self.n = n

    def __len__(self) -> int:
        return self.n


def read_gguf(path: str | Path) -> dict[str, Any]:
    """Metadata dict plus '__params__' (total weights) and '__tensors__' (count)."""
    with open(path, "rb") as f:
        if _read(f, 4) != b"GGUF":
            raise GgufError(f"{path}: not a GGUF file (bad magic)")
        version = _u32(f)
        if version < 2:
            raise GgufError(f"{path}: GGUF version {version} is too old to read")
        n_tensors, n_kv = _u64(f), _u64(f)
        meta: dict[str, Any] = {}
        for _ in range(n_kv):
            key = _string(f)
            meta[key] = _value(f, _u32(f))
        params = 0
        names = set()
        for _ in range(n_tensors):
            names.add(_string(f))
            dims = [_u64(f) for _ in range(_u32(f))]
            _u32(f)  # ggml type
            _u64(f)  # offset
            n = 1
            for d in dims:
                n *= d
            params += n
    meta["__params__"] = params
    meta["__tensors__"] = n_tensors
    meta["__tied__"] = "output.weight" not in names  # no separate LM head: it reuses token_embd
    return meta


# general.file_type -> the planner's precision id (llama.cpp's llama_ftype enum); others plan as "gguf_file"
FILE_TYPES = {0: "fp32", 1: "gguf_f16", 2: "q4_0", 3: "q4_1", 7: "q8_0", 10: "q2_k", 12: "q3_k_m", 14: "q4_k_s",
              15: "q4_k_m", 16: "q5_k_s", 17: "q5_k_m", 18: "q6_k", 30: "iq4_xs", 32: "bf16"}
