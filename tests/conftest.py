"""The whole suite's own folders, which every CLI and app process the tests start inherits: one for the
measured-silicon predictor's answers (advisor.planner.aic: the library's tables are read once per run), one user
data dir and one cache dir, so no test's probe, sweep, recalibration, machine bench or export reaches the user's
folders or changes the user's predictions (a test that needs its own folder sets the variable itself).

The cache dir starts as hard links to what the user's cache already holds (the llama.cpp build, the exports of the
bundled model): the real-engine tests reuse them without copying gigabytes, and anything written goes to the suite's
folder (exports and builds are written to a new name and renamed, never rewritten in place). At the end the user's
data and cache dirs are compared with how they were at the start, file by file (size, mtime, inode): any change
fails the run and is listed."""
import os
from pathlib import Path

import pytest

MAX_FILES = 200_000  # a manifest larger than this is cut (and says so): the walk stays bounded


def _user_dirs() -> list[Path]:
    """The real data and cache dirs, as the product finds them without the suite's variables."""
    from platformdirs import user_cache_dir, user_data_dir

    cache = os.environ.get("INFERENCE_ADVISOR_CACHE") or user_cache_dir("inference-advisor")
    data = os.environ.get("INFERENCE_ADVISOR_DATA") or user_data_dir("inference-advisor")
    return [Path(cache), Path(data)]


def _manifest(root: Path) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    if not root.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(root):  # links are listed, never followed
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns, st.st_ino)
            if len(out) >= MAX_FILES:
                return out
    return out


def _link_copy(src: Path, dst: Path) -> None:
    """dst as a tree of hard links to src's files (directories made anew); a file that cannot be linked (another
    filesystem) is left out, and the suite makes its own."""
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            s, d = Path(dirpath) / name, dst / rel / name
            try:
                if s.is_symlink():
                    d.symlink_to(os.readlink(s))
                else:
                    os.link(s, d)
            except OSError:
                continue


_BEFORE: dict[str, dict[str, tuple]] = {}


@pytest.fixture(scope="session", autouse=True)
def _own_folders(tmp_path_factory):
    from advisor.planner.aic import STORE_ENV
    from probes.cache import DATA_ENV, ENV

    real_cache = _user_dirs()[0]
    cache = tmp_path_factory.mktemp("user-cache")
    for name in ("builds", "wheels", "hf", "onnx"):
        if (real_cache / name).is_dir():
            _link_copy(real_cache / name, cache / name)
    for d in real_cache.glob("llama.cpp-*") if real_cache.is_dir() else []:
        if d.is_dir():
            _link_copy(d, cache / d.name)
    with pytest.MonkeyPatch.context() as mp:  # restored as they were when the session ends
        mp.setenv(STORE_ENV, str(tmp_path_factory.mktemp("aic-store")))
        mp.setenv(DATA_ENV, str(tmp_path_factory.mktemp("user-data")))
        mp.setenv(ENV, str(cache))
        yield


def pytest_sessionstart(session):
    for d in _user_dirs():
        _BEFORE[str(d)] = _manifest(d)


def pytest_sessionfinish(session, exitstatus):
    changed = []
    for d, before in _BEFORE.items():
        after = _manifest(Path(d))
        for rel in sorted(set(before) | set(after)):
            if before.get(rel) != after.get(rel):
                what = "added" if rel not in before else "removed" if rel not in after else "changed"
                changed.append(f"{what}: {Path(d) / rel}")
    if changed:
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = ["the suite changed the user's own folders (it must use its own):", *changed[:20],
                 *([f"... and {len(changed) - 20} more"] if len(changed) > 20 else [])]
        if tr is not None:
            tr.write_line("\n".join(lines), red=True)
        session.exitstatus = 1
