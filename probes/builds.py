"""Engine builds that compile from source (llama.cpp), run beside the app instead of before it.

`make run` installs what comes as wheels, starts `python -m probes build llama.cpp --background` and serves the app at
once; the pages and `python -m probes list` read `status()` (step, per cent, an estimate, the log's tail on failure).
One build at a time: the builder holds an exclusive lock on a file in the cache dir for its whole life, so a second
`make run` (or `make test`) sees the lock and waits or leaves it be; a builder that dies drops the lock with it.

What is built: one CMake build of the llama.cpp that the pinned llama-cpp-python vendors (`build_llama_cpp.sh`) makes
both `llama-server` and the shared libraries (libllama, libggml*, libmtmd). llama-cpp-python is installed as a wheel
built with `-DLLAMA_BUILD=OFF` (its CMake option: Python only, seconds) and loads libllama from its package's
`llama_cpp/lib` folder (or `LLAMA_CPP_LIB_PATH`; libmtmd from `MTMD_CPP_LIB`): `link_into_package()` copies the
build's libraries there, so every process that imports llama_cpp finds them without an environment variable.
"""
from __future__ import annotations

import argparse
import fcntl
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "build_llama_cpp.sh"
LLAMA_VERSION = "0.3.36"
#: Seconds the one build took on a quiet 2-core x86_64 machine (measured 2026-12-03, README); the first build's
#: estimate scales it by the cores here. Later estimates use the last build's own time.
REFERENCE_BUILD_S = 480.0
REFERENCE_CORES = 2
_LOG_MAX_BYTES = 8 << 20  # a build log is a few hundred KB; a bigger one is cut from the front when read
_TAIL_LINES = 15


def _flavour() -> tuple[str, list[str]]:
    """x86 builds leave AMX-INT8 out (AVX-512/VNNI stay): with -march=native on a CPU with AMX-INT8 ggml's AMX
    matmul crashed (SIGSEGV in ggml_backend_amx_mul_mat) on the first prompt of more than one token of the bundled
    model, llama-cpp-python 0.3.36. The folder's name says which build it is."""
    if platform.machine() in ("x86_64", "AMD64"):
        return "noamx", ["-DCMAKE_C_FLAGS=-mno-amx-int8", "-DCMAKE_CXX_FLAGS=-mno-amx-int8"]
    return "native", []


class BuildStatus(BaseModel):
    """Where a build stands, for the pages and `probes list`. `None` fields are not known (never 0)."""
    engine: str
    state: Literal["absent", "building", "ready", "failed"]
    step: str | None = None          # the build step now, e.g. "[3/4] compiling ggml, libllama, …"
    percent: float | None = None     # CMake's own per cent during the compile step
    elapsed_s: float | None = None
    eta_s: float | None = None       # seconds left, estimated
    build_s: float | None = None     # how long the finished build took
    dest: str
    log: str
    log_tail: list[str] = []
    retry: str = "make llama-cpp"

    def line(self) -> str:
        """One line for `probes list` and an availability reason."""
        if self.state == "ready":
            return f"built in {self.dest}"
        if self.state == "building":
            pct = f", {self.percent:.0f} %" if self.percent is not None else ""
            eta = f", about {max(1, round(self.eta_s / 60))} min left" if self.eta_s is not None else ""
            return f"building from source: {self.step or 'starting'}{pct}{eta} (log: {self.log})"
        if self.state == "failed":
            last = self.log_tail[-1] if self.log_tail else "no output"
            return f"the build failed: {last} (log: {self.log}; retry: {self.retry})"
        return f"not built yet (build it: {self.retry}; make run starts it)"


def _paths() -> tuple[Path, Path, Path, Path]:
    from probes.cache import cache_dir

    flavour, _ = _flavour()
    name = f"llama.cpp-{LLAMA_VERSION}-{flavour}"
    base = cache_dir()
    state = base / "builds"
    return base / name, state / f"{name}.log", state / f"{name}.lock", state / f"{name}.json"


def llama_dir() -> Path | None:
    """The finished build's folder (llama-server and the shared libraries), or None."""
    dest = _paths()[0]
    ok = (dest / "llama-server").is_file() and os.access(dest / "llama-server", os.X_OK) and \
        (dest / "libllama.so").is_file()
    return dest if ok else None


def _locked(lock: Path) -> bool:
    """Whether a builder holds the lock now (it is held for the builder's whole life)."""
    if not lock.exists():
        return False
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _read_tail(log: Path) -> list[str]:
    try:
        with open(log, "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - min(_LOG_MAX_BYTES, 256 << 10)))
            return f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []


_STEP = re.compile(r"^>>> (\[\d/\d\] .*)$")
_PCT = re.compile(r"^\[\s*(\d{1,3})%\]")
_NOISE = re.compile(rb"^g?make\[\d+\]: (Entering|Leaving) directory")


def _meta(path: Path) -> dict:
    try:
        if path.stat().st_size > 64 << 10:
            return {}
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _estimate_total_s(meta: dict) -> float:
    last = meta.get("last_build_s")
    if isinstance(last, (int, float)) and 30 <= last <= 24 * 3600:
        return float(last)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2)
    return REFERENCE_BUILD_S * REFERENCE_CORES / max(1, cores)


def status(engine: str = "llama.cpp") -> BuildStatus:
    """Reads the lock, the log and the build's record; writes nothing."""
    if engine != "llama.cpp":
        raise ValueError(f"no source build for {engine!r}")
    dest, log, lock, meta_path = _paths()
    meta = _meta(meta_path)
    common = {"engine": engine, "dest": str(dest), "log": str(log)}
    if _locked(lock):
        lines = _read_tail(log)
        step = next((m.group(1) for m in map(_STEP.match, reversed(lines)) if m), None)
        if step is None and isinstance(meta.get("step"), str):
            step = meta["step"]  # the builder's record: the log's tail is all compile lines by now
        pct = None
        if step and step.startswith("[3/4]"):
            pct = next((float(m.group(1)) for m in map(_PCT.match, reversed(lines)) if m), 0.0)
        elif step and step.startswith("[4/4]"):
            pct = 100.0
        started = meta.get("started_at")
        elapsed = max(0.0, time.time() - started) if isinstance(started, (int, float)) else None
        eta = None
        if elapsed is not None:
            total = _estimate_total_s(meta)
            eta = max(0.0, total - elapsed)
            if pct and pct >= 10 and elapsed > 0:  # CMake's per cent, once it says enough
                eta = min(eta + total * 0.5, elapsed * (100 - pct) / pct)
        return BuildStatus(state="building", step=step, percent=pct, elapsed_s=elapsed, eta_s=eta, **common)
    if llama_dir() is not None:
        b = meta.get("last_build_s")
        return BuildStatus(state="ready", build_s=float(b) if isinstance(b, (int, float)) else None, **common)
    if meta.get("state") == "failed":
        tail = [ln for ln in _read_tail(log) if ln.strip()][-_TAIL_LINES:]
        return BuildStatus(state="failed", log_tail=tail, **common)
    return BuildStatus(state="absent", **common)


def package_lib_dir() -> Path | None:
    """llama_cpp/lib of the installed llama-cpp-python (found without importing it), or None."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "lib"


def link_into_package() -> str | None:
    """Copy the build's shared libraries into llama_cpp/lib, where llama-cpp-python 0.3.36 loads them, unless that
    folder already holds a libllama of its own (a full wheel, e.g. the CUDA build the GPU stack compiles). Returns
    None when llama_cpp can load a libllama now, else why not. Idempotent and cheap: it compares sizes."""
    lib = package_lib_dir()
    if lib is None:
        return "llama_cpp is not importable (llama-cpp-python not installed)"
    marker = lib / ".from-inference-advisor"
    if (lib / "libllama.so").exists() and not marker.exists():
        return None  # the wheel's own libraries
    src = llama_dir()
    if src is None:  # not built (yet); libraries copied before still load
        return None if (lib / "libllama.so").exists() else status().line()
    try:
        lib.mkdir(parents=True, exist_ok=True)
        for f in sorted(src.glob("*.so*")):
            target = lib / f.name
            if f.is_symlink():
                if not target.is_symlink() or os.readlink(target) != os.readlink(f):
                    target.unlink(missing_ok=True)
                    target.symlink_to(os.readlink(f))
            elif not target.exists() or target.stat().st_size != f.stat().st_size:
                shutil.copy2(f, target.with_suffix(target.suffix + ".part"))
                os.replace(target.with_suffix(target.suffix + ".part"), target)
        marker.write_text(str(src) + "\n")
    except OSError as err:
        return f"could not link the built libraries into {lib}: {err.strerror or err}"
    return None


def _record(meta_path: Path, **fields) -> None:
    meta = _meta(meta_path)
    meta.update(fields)
    tmp = meta_path.with_suffix(".json.part")
    tmp.write_text(json.dumps(meta))
    os.replace(tmp, meta_path)


def _build_locked(dest: Path, log: Path, meta_path: Path, python: str) -> int:
    """Runs the build script with its output in the log; the caller holds the lock."""
    _, flags = _flavour()
    started = time.time()
    _record(meta_path, state="building", started_at=started, pid=os.getpid(), step=None)
    env = dict(os.environ, PY=python)
    with open(log, "wb") as out:
        proc = subprocess.Popen(["sh", str(SCRIPT), LLAMA_VERSION, str(dest), *flags],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        for raw in proc.stdout:  # the log without make's directory chatter (a 1.3 MB log became ~0.3 MB)
            if _NOISE.match(raw):
                continue
            out.write(raw)
            out.flush()
            m = _STEP.match(raw.decode("utf-8", "replace").rstrip("\r\n"))
            if m:  # the step is kept in the record too: the log's tail no longer holds it once the compile is long
                _record(meta_path, step=m.group(1)[:200])
        rc = proc.wait()
    if rc == 0 and llama_dir() is not None:
        _record(meta_path, state="ready", finished_at=time.time(), last_build_s=round(time.time() - started, 1))
        why = link_into_package()
        if why:
            with open(log, "a") as out:
                out.write(f"warning: {why}\n")
        return 0
    _record(meta_path, state="failed", finished_at=time.time(), rc=rc)
    return rc or 1


def build(wait: bool, background: bool, quiet: bool = False) -> int:
    """`--background`: start a detached builder unless one runs or the build is there, and return. `--wait`: wait
    for a running builder, else build in the foreground; print progress; exit 0 when llama.cpp is ready."""
    dest, log, lock, meta_path = _paths()
    lock.parent.mkdir(parents=True, exist_ok=True)
    say = (lambda *_: None) if quiet else (lambda m: print(m, flush=True))
    if llama_dir() is not None:
        link_into_package()
        say(f">>> llama.cpp {LLAMA_VERSION} is built ({dest})")
        return 0
    if background:
        if _locked(lock):
            say(f">>> llama.cpp is already building ({status().line()})")
            return 0
        subprocess.Popen([sys.executable, "-m", "probes.builds", "--builder"], cwd=str(HERE.parent),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
        say(f">>> llama.cpp builds in the background (about {round(_estimate_total_s(_meta(meta_path)) / 60)} min; "
            f"log: {log}); the app serves meanwhile and shows its progress")
        return 0
    last = None
    while _locked(lock):  # another builder: wait for it, showing where it is
        line = status().line()
        if line != last:
            say(f">>> {line}")
            last = line
        time.sleep(5)
    if llama_dir() is None:
        say(f">>> building llama.cpp {LLAMA_VERSION} from source (about "
            f"{round(_estimate_total_s(_meta(meta_path)) / 60)} min; log: {log})")
        rc = _builder(lock, dest, log, meta_path)
        if rc == 75:  # another builder took the lock between the two checks
            return build(wait, background, quiet)
    st = status()
    if st.state != "ready":
        say(f">>> llama.cpp: {st.line()}")
        for ln in st.log_tail:
            say(f"    {ln}")
        return 1
    link_into_package()
    say(f">>> llama.cpp {LLAMA_VERSION} is built ({dest}, {st.build_s} s)")
    return 0


def _builder(lock: Path, dest: Path, log: Path, meta_path: Path) -> int:
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return 75
    try:
        if llama_dir() is not None:
            return 0
        return _build_locked(dest, log, meta_path, sys.executable)
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m probes.builds")
    p.add_argument("--builder", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.builder:
        dest, log, lock, meta_path = _paths()
        return 0 if _builder(lock, dest, log, meta_path) == 75 else 0
    return build(wait=True, background=False)


if __name__ == "__main__":
    raise SystemExit(main())
