"""The prefill/decode bundle, where the plan recommends the split: the bundle's own command started as a prefill and a
decode instance with the engine's documented switches (vLLM's NIXL KV connector; SGLang's --disaggregation-mode and
its router), each on its port, worker size and GPUs; checked by vLLM's own parser and SGLang's flag table, the
scripts run with stand-ins. The verdict is the planner's (tests/advisor/planner/test_disagg.py); here a plan whose
split pays at its centre is marked recommended, as a plan that also pays at its band's slow end would be."""
from __future__ import annotations

import subprocess

import pytest

from advisor.deploy import bundle_for
from advisor.inputs.answers import parse_answers
from advisor.planner import make_plan
from tests.advisor.deploy.test_multinode import _k, vllm_parse

ANSWERS = parse_answers({"concurrency": 256, "ttft_p95_ms": 3000, "itl_p95_ms": 25,
                         "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 8},
                         "model": {"name": "llama-3.1-8b", "precision": "fp8", "context_tokens": 32768,
                                   "input_tokens": 8000, "output_tokens": 200}})


@pytest.fixture(scope="module")
def recommended():
    plan = make_plan(ANSWERS, None, _k(), lang="en")
    out = {}
    for e in ("vllm", "sglang"):
        d = plan.engines[e].serving.disaggregation
        assert d is not None and d.gpus is not None and d.aggregated_gpus is not None and d.gpus < d.aggregated_gpus
        d.recommended = True
        out[e] = bundle_for(e, plan, ANSWERS, _k(), "en")
    return out


def _run(b, name, tmp_path, program, env=None):
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    stub = bin_ / program
    stub.write_text('#!/bin/sh\necho "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"\n'
                    'for a in "$@"; do printf "%s\\n" "$a"; done\n')
    stub.chmod(0o755)
    script = tmp_path / name
    script.write_text(b.files[name])
    assert subprocess.run(["sh", "-n", str(script)]).returncode == 0
    out = subprocess.run(["sh", str(script)], capture_output=True, text=True, timeout=30, cwd=tmp_path,
                         env={"PATH": f"{bin_}:/usr/bin:/bin", **(env or {})})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    return lines[0].split("=", 1)[1], lines[1:]


def test_vllm_gets_a_prefill_and_a_decode_script_its_parser_takes(recommended, tmp_path):
    b = recommended["vllm"]
    assert {"pd-prefill.sh", "pd-decode.sh"} <= set(b.files) and "pd-router.sh" not in b.files
    assert b.pd_prefill >= 1 and b.pd_decode >= 1 and any("prefill/decode disaggregation" in w for w in b.warnings)
    runs = {}
    for side in ("prefill", "decode"):
        gpus, argv = _run(b, f"pd-{side}.sh", tmp_path, "vllm")
        assert argv[0] == "serve" and len(gpus.split(",")) == b.pd_gpus
        runs[side] = (gpus, argv[1:])
    assert runs["prefill"][0] != runs["decode"][0]  # side by side, not on the same GPUs
    keys = ("port", "tensor_parallel_size", "kv_transfer_config.kv_connector", "kv_transfer_config.kv_role")
    pre, dec = [list(x.values()) for x in vllm_parse([runs["prefill"][1], runs["decode"][1]], keys)]
    assert pre == [8100, b.pd_gpus, "NixlConnector", "kv_both"] and dec == [8200, b.pd_gpus, "NixlConnector", "kv_both"]


def test_sglang_gets_both_sides_and_its_router(recommended, tmp_path):
    from tests.advisor.deploy.test_deploy_parsers import sglang_parser

    b = recommended["sglang"]
    assert {"pd-prefill.sh", "pd-decode.sh", "pd-router.sh"} <= set(b.files)
    for side, port in (("prefill", 30000), ("decode", 30001)):
        _, argv = _run(b, f"pd-{side}.sh", tmp_path, "python3")
        assert argv[:2] == ["-m", "sglang.launch_server"]
        ns = sglang_parser().parse_args(argv[2:])
        assert ns.disaggregation_mode == side and ns.port == port and ns.tp_size == b.pd_gpus
        assert ns.disaggregation_transfer_backend == "mooncake"
    _, argv = _run(b, "pd-router.sh", tmp_path, "python3", env={"PREFILL_URL": "http://10.0.0.1:30000"})
    assert argv[:3] == ["-m", "sglang_router.launch_router", "--pd-disaggregation"]
    assert argv[argv.index("--prefill") + 1] == "http://10.0.0.1:30000"
    assert argv[argv.index("--decode") + 1] == "http://127.0.0.1:30001" and argv[argv.index("--port") + 1] == "8000"


def test_a_split_that_is_not_recommended_writes_no_pd_files():
    plan = make_plan(ANSWERS, None, _k(), lang="en")
    for e in ("vllm", "sglang"):
        d = plan.engines[e].serving.disaggregation
        assert d.verdict == "band" and not d.recommended  # this case pays at the centre only (the fixture's premise)
        assert not any(n.startswith("pd-") for n in bundle_for(e, plan, ANSWERS, _k(), "en").files)
