"""The user cache dir for generated artefacts (HF folders, ONNX exports, the machine bench), where the user data dir
is, and a careful reader for the small files we keep in either.

Its own module, free of engine imports, so that advisor can share it without reaching an engine.
Anything in the cache may have been replaced by anyone (a FIFO, a link to /dev/zero, a truncated or hand-edited
file): it is read as an input, and whatever does not pass is treated as missing, so the caller rebuilds it.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

ENV = "INFERENCE_ADVISOR_CACHE"


class CacheDirError(OSError):
    """The cache dir cannot be a folder (a file stands there, or it cannot be created). One line, naming the variable.

    An OSError, so the handlers that already treat an unwritable cache as "not cached" keep doing so."""


def cache_dir() -> Path:
    env = os.environ.get(ENV)
    if env:
        d, where = Path(env).expanduser(), f"{ENV}={env}"
    else:
        try:
            from platformdirs import user_cache_dir

            d = Path(user_cache_dir("inference-advisor"))
        except ImportError:
            d = Path.home() / ".cache" / "inference-advisor"
        where = f"the cache dir {d} (set {ENV} to another folder)"
    if d.exists() and not d.is_dir():
        raise CacheDirError(f"{where} is a file, not a directory")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # a parent that is a file, no permission, a read-only or full disk
        raise CacheDirError(f"{where}: cannot create the folder ({err.strerror or type(err).__name__})") from None
    return d


DATA_ENV = "INFERENCE_ADVISOR_DATA"


def data_dir() -> tuple[Path, str]:
    """The user data dir (what the user made here and would miss: the probe history, this machine's recalibration),
    not created, and how to name it in a one-line error: $INFERENCE_ADVISOR_DATA, else the platform's data dir."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env), f"{DATA_ENV}={env}"
    from platformdirs import user_data_dir

    d = Path(user_data_dir("inference-advisor"))
    return d, f"the data dir {d} (set {DATA_ENV} to another folder)"


def read_cache_file(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of one of our own cache files, or None when it is not a plain file of at most max_bytes.

    stat() first, and never open what is not a regular file: opening a FIFO blocks until a writer comes, and a device
    (a link to /dev/zero) never ends. At most max_bytes + 1 bytes are read, so a file that grows while we read it
    cannot make us read more."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # swapped for a FIFO since the stat: no wait
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            chunks, size = [], 0
            while size <= max_bytes:  # one read() may return less than asked
                chunk = os.read(fd, max_bytes + 1 - size)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            data = b"".join(chunks)
        finally:
            os.close(fd)
    except OSError:
        return None
    return data if len(data) <= max_bytes else None


def write_cache_file(path: Path, data: bytes) -> None:
    """Write whole or not at all: a temporary file beside `path`, then os.replace, which also replaces a FIFO,
    a link or a device node standing at `path` without opening it. Raises OSError (the caller decides)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
