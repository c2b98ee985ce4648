"""`advisor deploy --out DIR` writes each engine's folder whole, never through a link: a link planted where a script
will go, or in place of an engine's folder, is replaced, and what it pointed at is untouched (audit: the target of
DIR/llama.cpp/launch.sh was overwritten with the script and made 0755). A second run leaves no file of the first
that this run did not write."""
from __future__ import annotations

import os
import stat

from tests.hostile.kit import ROOT, bounded

THIS_MACHINE = str(ROOT / "examples" / "this-machine-smollm2.yaml")


def _deploy(out):
    o = bounded(["-m", "advisor", "deploy", "--answers", THIS_MACHINE, "--out", str(out)], hard_limit_s=120)
    assert o.rc == 0 and "Traceback" not in o.err, o.err[-2000:]
    return o


def test_a_link_where_the_script_goes_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    out = tmp_path / "out"
    (out / "llama.cpp").mkdir(parents=True)
    (out / "llama.cpp" / "launch.sh").symlink_to(victim)
    _deploy(out)
    assert victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    script = out / "llama.cpp" / "launch.sh"
    assert not script.is_symlink() and script.is_file() and script.stat().st_mode & stat.S_IXUSR
    assert "llama-server" in script.read_text()


def test_an_engine_folder_that_is_a_link_is_replaced_and_its_target_left_alone(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "llama.cpp").symlink_to(elsewhere, target_is_directory=True)
    _deploy(out)
    assert sorted(os.listdir(elsewhere)) == ["keep.txt"]
    assert not (out / "llama.cpp").is_symlink() and (out / "llama.cpp" / "launch.sh").is_file()


def test_a_second_run_leaves_nothing_of_the_first_and_no_temp_folder(tmp_path):
    out = tmp_path / "out"
    _deploy(out)
    (out / "llama.cpp" / "stale-from-an-h100-plan.yaml").write_text("old\n")
    _deploy(out)
    assert not (out / "llama.cpp" / "stale-from-an-h100-plan.yaml").exists()
    assert not [p for p in os.listdir(out) if p.startswith(".")]
