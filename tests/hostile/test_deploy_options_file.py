"""TensorRT-LLM's scripts find their options file beside themselves, wherever they are run from (audit, low:
launch.sh wrote extra-llm-api-options.yaml into the current folder, and docker-run.sh mounted $PWD's copy without
writing it, so run from elsewhere the container got no file). Both scripts now write it next to themselves and pass
or mount that one. Checked by running them from another folder with stand-ins for trtllm-serve and docker that
print what they were given."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.hostile.kit import bounded

OPTIONS = "extra-llm-api-options.yaml"
STAND_IN = '#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n'  # one argument a line


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    o = bounded(["-m", "advisor", "deploy", "--answers", "examples/nvidia-strict-sla.yaml", "--engine",
                 "tensorrt-llm", "--format", "json"], hard_limit_s=120)
    assert o.rc == 0, o.err[-1500:]
    b = json.loads(o.out)
    assert OPTIONS in b["files"], list(b["files"])
    folder = tmp_path_factory.mktemp("bundle") / "tensorrt-llm"
    folder.mkdir()
    for name in ("launch.sh", "docker-run.sh"):
        (folder / name).write_text(b["files"][name])
    return folder, b["files"][OPTIONS]


def _run(script, tmp_path, program: str) -> tuple[list[str], object]:
    """Run `script` with `sh` from an unrelated folder, `program` a stand-in; (its arguments, that folder)."""
    bin_dir, elsewhere = tmp_path / "bin", tmp_path / "elsewhere"
    bin_dir.mkdir()
    elsewhere.mkdir()
    (bin_dir / program).write_text(STAND_IN)
    (bin_dir / program).chmod(0o755)
    r = subprocess.run(["sh", str(script)], cwd=elsewhere, capture_output=True, text=True, timeout=30,
                       env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "MODEL": "/m",
                            "MODEL_DIR": "/m"})
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines(), elsewhere


@pytest.mark.parametrize("name", ["launch.sh", "docker-run.sh"])
def test_the_scripts_parse(bundle, name):
    if not shutil.which("bash"):
        pytest.skip("no bash here")
    r = subprocess.run(["bash", "-n", str(bundle[0] / name)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_launch_sh_writes_and_passes_the_file_beside_itself(bundle, tmp_path):
    folder, body = bundle
    (folder / OPTIONS).unlink(missing_ok=True)
    args, elsewhere = _run(folder / "launch.sh", tmp_path, "trtllm-serve")
    given = args[args.index("--extra_llm_api_options") + 1]
    assert given == str(folder / OPTIONS) and (folder / OPTIONS).read_text() == body
    assert not (elsewhere / OPTIONS).exists()  # nothing written where it was run from


def test_docker_run_sh_writes_and_mounts_the_file_beside_itself(bundle, tmp_path):
    folder, body = bundle
    (folder / OPTIONS).unlink(missing_ok=True)
    args, elsewhere = _run(folder / "docker-run.sh", tmp_path, "docker")
    mounts = [args[i + 1] for i, a in enumerate(args) if a == "-v"]
    assert f"{folder / OPTIONS}:/{OPTIONS}:ro" in mounts, mounts
    assert (folder / OPTIONS).read_text() == body and not (elsewhere / OPTIONS).exists()
    assert args[args.index("--extra_llm_api_options") + 1] == f"/{OPTIONS}"
