"""`advisor deploy --out DIR` on a full disk leaves no partial bundle: this run's engine folders land all together
or not at all, and the CLI says one line (audit: a full disk left six files, one an empty bundle.json; later, the
engines written before the failing one stayed, beside an earlier run's others).

The full disk is simulated in-process: no test can fill a real file system safely on a shared machine, and a tmpfs
needs privileges the suite does not have. Every file this run creates under DIR after the first `FREE_FILES` is
pointed at /dev/full, so its writes fail with ENOSPC however the product writes them (os.write, a file object, a
flush at close), and the file itself exists, empty, as on a full disk."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.hostile.kit import ROOT

ANSWERS = str(ROOT / "examples" / "cpu-only-box.yaml")  # its hardware block: nothing of this machine is measured
FREE_FILES = 7  # the first engine's folder (5 files) fits, the second one's does not


def _snapshot(out: Path) -> dict[str, bytes | None]:
    """Every path under `out` (hidden ones too), with a file's bytes."""
    if not out.exists():
        return {}
    return {str(p.relative_to(out)): (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
            for p in sorted(out.rglob("*"))}


def _disk_full_after(monkeypatch, out: Path, free_files: int) -> None:
    real_open = os.open
    created = {"n": 0}

    def full_open(path, flags, mode=0o777, *, dir_fd=None):
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        if flags & os.O_CREAT and str(Path(os.fsdecode(path)).resolve()).startswith(str(out.resolve())):
            created["n"] += 1
            if created["n"] > free_files:
                full = real_open("/dev/full", os.O_WRONLY)
                os.dup2(full, fd)
                os.close(full)
        return fd

    monkeypatch.setattr(os, "open", full_open)


def _deploy(capsys, out: Path) -> tuple[int, str]:
    from advisor.cli import main

    capsys.readouterr()
    rc = main(["deploy", "--answers", ANSWERS, "--out", str(out)])
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("free_files", [0, FREE_FILES])
def test_a_full_disk_leaves_nothing_of_this_run(monkeypatch, capsys, tmp_path, free_files):
    out = tmp_path / "bundles"
    _disk_full_after(monkeypatch, out, free_files)
    rc, err = _deploy(capsys, out)
    assert _snapshot(out) == {}, _snapshot(out)  # no engine folder, no empty file, no temp folder
    assert not out.exists()  # the folder this run made for them goes too
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 1 and len(lines) == 1 and "Traceback" not in err, err[-1500:]
    assert "No space left on device" in lines[0] and "nothing" in lines[0], lines[0]


def test_a_full_disk_leaves_an_earlier_run_as_it_was(monkeypatch, capsys, tmp_path):
    out = tmp_path / "bundles"
    rc, err = _deploy(capsys, out)
    assert rc == 0, err[-1500:]
    (out / "llama.cpp" / "notes-of-mine.txt").write_text("kept\n")  # the earlier state, recognisable
    before = _snapshot(out)
    _disk_full_after(monkeypatch, out, FREE_FILES)
    rc, err = _deploy(capsys, out)
    assert _snapshot(out) == before
    assert rc == 1 and len(err.strip().splitlines()) == 1, err[-1500:]
