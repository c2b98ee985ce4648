"""Every generated server command, checked against the engine's own parser where the engine is installed here:
vLLM's (in .venv-vllm, one subprocess for all commands), llama-server's --help and llama-cpp-python's ModelSettings,
and `transformers serve`'s click command; SGLang's and TensorRT-LLM's against their flag tables read from their
sources (tests/advisor/data/cli_flags/*.yaml), rebuilt as an argparse / click parser."""
from __future__ import annotations

import argparse
import functools
import json
import re
import subprocess
from pathlib import Path

import click
import pytest
import yaml

from advisor.deploy import Bundle
from advisor.inputs.answers import parse_answers
from advisor.cli import deploy_bundles
from tests.advisor.deploy.test_deploy import CASES, HOSTILE, SCENARIOS, knowledge, made

ROOT = Path(__file__).resolve().parents[3]
TABLES = Path(__file__).resolve().parents[1] / "data" / "cli_flags"
DEPLOY = yaml.safe_load((ROOT / "knowledge" / "deploy.yaml").read_text(encoding="utf-8"))["engines"]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"

# beside the shared scenarios: an INT8 (q8_0) KV cache for llama.cpp (-fa on), a hostile served name
EXTRA = {"8b-l40s-kv-int8": {**SCENARIOS["8b-l40s"], "model": {**SCENARIOS["8b-l40s"]["model"], "kv_cache_dtype": "int8"}}}


@functools.lru_cache(maxsize=None)
def _extra(case: str) -> tuple[Bundle, ...]:
    found, _ = deploy_bundles(parse_answers(EXTRA[case]), knowledge(), "en")
    return tuple(found)


def commands(engine: str) -> list[tuple[str, Bundle]]:
    """Every ok bundle of `engine` over the shared cases, the extra ones and a hostile served name."""
    out = [(case, b) for case in CASES for b in made(case)[1] if b.engine == engine and b.status == "ok"]
    out += [(case, b) for case in EXTRA for b in _extra(case) if b.engine == engine and b.status == "ok"]
    out += [(f"hostile-{i}", b) for i, name in enumerate(HOSTILE) for b in made("8b-l40s", "en", name)[1]
            if b.engine == engine and b.status == "ok"]
    assert out, f"no {engine} bundle to check"
    return out


def values(b: Bundle) -> dict[str, str | None]:
    return {a.flag: a.value for a in b.args}


# -------------------------------------------------------------------------------------------------------- vLLM
_VLLM_CHECK = r"""
import contextlib, io, json, sys
import vllm, vllm.envs
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.engine.arg_utils import AsyncEngineArgs
jobs = json.load(sys.stdin)
parser = make_arg_parser(FlexibleArgumentParser())
out = {"version": vllm.__version__, "options": sorted({o for a in parser._actions for o in a.option_strings}),
       "env": sorted(vllm.envs.environment_variables), "results": []}
for argv in jobs:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = parser.parse_args(argv)
    except SystemExit as e:
        out["results"].append({"error": f"exit {e.code}: {err.getvalue()[-400:]}"})
        continue
    ns.model = ns.model_tag  # what `vllm serve MODEL` does (vllm/entrypoints/cli/serve.py)
    ea = AsyncEngineArgs.from_cli_args(ns)
    out["results"].append({k: getattr(ea, k) for k in (
        "model", "served_model_name", "max_model_len", "max_num_seqs", "gpu_memory_utilization",
        "tensor_parallel_size", "pipeline_parallel_size", "kv_cache_dtype", "enable_prefix_caching",
        "max_num_batched_tokens", "dtype", "quantization")} | {"host": ns.host, "port": ns.port})
from vllm.utils.torch_utils import get_kv_cache_quant_algo_string
out["kv_algo"] = [get_kv_cache_quant_algo_string(q) for q in KV_QUANT_CONFIGS]
print("RESULT:" + json.dumps(out))
"""

# quantization_config blocks whose KV dtype vLLM's own reader and the planner's must agree on (ModelOpt with and
# without FP8 KV, the scheme form, llm-compressor's FP8 with a kv_cache_scheme that vLLM's auto does not take)
KV_QUANT_CONFIGS = [
    {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
    {"quant_method": "modelopt", "quant_algo": "FP8"},
    {"quant_method": "modelopt", "quant_algo": "FP8",
     "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"}},
    {"quant_method": "compressed-tensors", "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"}},
    {"quant_method": "fp8", "activation_scheme": "dynamic"},
    {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_scheme": {"num_bits": 8, "type": "float"}},
    {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8_E5M2"},
    {"quant_method": "modelopt", "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}},
]


_VLLM_WRONG = ["/m", "--max-num-seqs", "4", "--no-such-flag", "1"]


@pytest.fixture(scope="module")
def vllm_parsed():
    if not VLLM_PYTHON.exists():
        pytest.skip("no .venv-vllm here (make test installs it)")
    cmds = commands("vllm")
    jobs = []
    for _, b in cmds:
        argv = b.argv()
        assert argv[:2] == ["vllm", "serve"]
        jobs.append(argv[2:])
    jobs.append(_VLLM_WRONG)  # last: a command the parser must refuse
    script = f"KV_QUANT_CONFIGS = {KV_QUANT_CONFIGS!r}\n" + _VLLM_CHECK.replace("\nimport contextlib", "import contextlib", 1)
    r = subprocess.run([str(VLLM_PYTHON), "-c", script], input=json.dumps(jobs), capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT:")), None)
    assert r.returncode == 0 and line, r.stderr[-2000:]
    data = json.loads(line[len("RESULT:"):])
    data["wrong"] = data["results"].pop()
    return cmds, data


def test_vllm_is_the_version_the_flags_were_read_for(vllm_parsed):
    _, data = vllm_parsed
    assert data["version"] == DEPLOY["vllm"]["version"] == "0.32.0"


def test_the_planner_reads_a_checkpoints_kv_dtype_as_vllms_own_code_does(vllm_parsed):
    """kv_cache_dtype auto on an FP8 checkpoint: the planner's FP8-KV reading of quantization_config matches vLLM's
    get_kv_cache_quant_algo_string (the function resolve_kv_cache_dtype_string calls) on every form."""
    from advisor.planner.spec import _kv_declared

    _, data = vllm_parsed
    theirs = ["fp8" if v and str(v).startswith("fp8") else "none" for v in data["kv_algo"]]
    assert theirs == [_kv_declared(q) for q in KV_QUANT_CONFIGS]
    assert theirs[0] == "fp8" and theirs[1] == "none"  # the check can fail: the two ModelOpt forms differ


def test_vllms_gpu_dependent_defaults_are_the_installed_packages():
    """knowledge/serving.yaml's vLLM max_num_seqs / max_num_batched_tokens by GPU are read from the pinned package's
    get_batch_defaults: its GPU branches (>= 160 GiB; >= 70 GiB and not an A100; the rest) and its CPU one, with the
    OpenAI server's values in each, in order."""
    import ast

    found = sorted(ROOT.glob(".venv-vllm/lib/python*/site-packages/vllm/engine/arg_utils.py"))
    if not found:
        pytest.skip("no .venv-vllm here (make test installs it)")
    tree = ast.parse(found[0].read_text(encoding="utf-8"))
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "get_batch_defaults")
    branch = next(n for n in ast.walk(fn) if isinstance(n, ast.If) and "160 * GiB_bytes" in ast.unparse(n.test))
    tiers, node = [], branch
    while True:
        vals = {}
        for st in node.body:
            if isinstance(st, ast.Assign) and isinstance(st.value, ast.Dict):
                name = st.targets[0].id
                vals[name] = next(ast.literal_eval(v) for k, v in zip(st.value.keys, st.value.values)
                                  if "OPENAI_API_SERVER" in ast.unparse(k))
        tiers.append((ast.unparse(node.test) if isinstance(node, ast.If) else "", vals))
        if node.orelse and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
            continue
        tiers.append(("", {st.targets[0].id: next(ast.literal_eval(v) for k, v in zip(st.value.keys, st.value.values)
                                                    if "OPENAI_API_SERVER" in ast.unparse(k))
                           for st in node.orelse if isinstance(st, ast.Assign) and isinstance(st.value, ast.Dict)}))
        break
    cpu = next(n for n in ast.walk(fn) if isinstance(n, ast.If) and "is_cpu()" in ast.unparse(n.test))
    tiers.append(("cpu", {st.targets[0].id: next(ast.literal_eval(v.left) if isinstance(v, ast.BinOp) else
                                                 ast.literal_eval(v) for k, v in zip(st.value.keys, st.value.values)
                                                 if "OPENAI_API_SERVER" in ast.unparse(k))
                          for st in cpu.body if isinstance(st, ast.Assign) and isinstance(st.value, ast.Dict)}))
    ours = knowledge().serving.modes["vllm"].target_defaults
    assert len(tiers) == len(ours) == 4 and [o.device for o in ours] == ["gpu", "gpu", "gpu", "cpu"]
    assert "160 * GiB_bytes" in tiers[0][0] and "70 * GiB_bytes" in tiers[1][0] and "'a100'" in tiers[1][0]
    assert [o.min_gpu_gib for o in ours] == [160, 70, 0, 0] and ours[1].not_ids_with == ["a100"]
    for (_, vals), o in zip(tiers, ours):
        assert (vals["default_max_num_seqs"], vals["default_max_num_batched_tokens"]) == (o.max_running,
                                                                                          o.batched_tokens)


def test_vllm_documents_every_flag_we_may_write(vllm_parsed):
    _, data = vllm_parsed
    options = set(data["options"])
    assert set(DEPLOY["vllm"]["documented_flags"]) <= options
    assert set(DEPLOY["vllm"]["flags"].values()) <= set(DEPLOY["vllm"]["documented_flags"])
    assert set(DEPLOY["vllm"]["cpu_env"].values()) <= set(data["env"])


def test_vllm_parses_every_generated_command(vllm_parsed):
    cmds, data = vllm_parsed
    assert len(data["results"]) == len(cmds)
    for (case, b), got in zip(cmds, data["results"]):
        assert "error" not in got, (case, got.get("error"))
        v = values(b)
        assert set(v) <= set(data["options"]), (case, set(v) - set(data["options"]))  # spelled out, not a prefix
        assert got["model"] == b.model_path
        assert got["served_model_name"] in ([v["--served-model-name"]], v["--served-model-name"])
        assert got["host"] == "0.0.0.0" and got["port"] == b.port == 8000
        assert got["max_model_len"] == int(v["--max-model-len"])
        assert got["max_num_seqs"] == int(v["--max-num-seqs"])
        if "--gpu-memory-utilization" in v:
            assert got["gpu_memory_utilization"] == float(v["--gpu-memory-utilization"])
        else:
            assert b.device == "cpu", case
        assert got["tensor_parallel_size"] == int(v.get("--tensor-parallel-size", 1))
        assert got["pipeline_parallel_size"] == int(v.get("--pipeline-parallel-size", 1))
        assert got["kv_cache_dtype"] == v["--kv-cache-dtype"]
        assert got["enable_prefix_caching"] is True
        assert got["dtype"] == v["--dtype"]
        assert got["quantization"] == v.get("--quantization")
        if "--max-num-batched-tokens" in v:
            assert got["max_num_batched_tokens"] == int(v["--max-num-batched-tokens"])


def test_vllm_refuses_a_wrong_flag(vllm_parsed):
    """The vLLM check can fail: its parser exits on a flag it does not have. (It takes a prefix of a flag, e.g.
    --max-num-seq, as the flag: so the test above also checks each flag is spelled out in full.)"""
    _, data = vllm_parsed
    assert "error" in data["wrong"] and "--no-such-flag" in data["wrong"]["error"]


# -------------------------------------------------------------------------------------------------- llama-server
@pytest.fixture(scope="module")
def llama_help():
    from probes.backends.llama_cpp import llama_server_binary

    binary = llama_server_binary()
    if binary is None:
        pytest.skip("llama-server is not built here (make llama-server)")
    r = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60)
    text = r.stdout + r.stderr
    assert r.returncode == 0 and "--ctx-size" in text, text[-500:]
    return parse_llama_help(text)


def parse_llama_help(text: str) -> tuple[dict[str, bool], dict[str, list[str]]]:
    """({flag: takes a value}, {flag: allowed values}) from llama-server --help: an option line is `-x, --long META`
    then the description after a gap (the gap after a comma is the column layout, not the end)."""
    takes: dict[str, bool] = {}
    allowed: dict[str, list[str]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("-") or line.startswith("----"):
            continue
        head = re.split(r"(?<![,\s])\s{2,}", line, maxsplit=1)[0]
        parts = [p.strip() for p in head.split(",") if p.strip()]
        has_value = len(parts[-1].split()) > 1
        names = [p.split()[0] for p in parts]
        for n in names:
            takes[n] = has_value
        for nxt in lines[i + 1:i + 4]:
            if not nxt.startswith(" "):  # the next option
                break
            m = re.search(r"allowed values: ([\w, ]+)", nxt)
            if m:
                for n in names:
                    allowed[n] = [x.strip() for x in m.group(1).split(",")]
    return takes, allowed


def test_the_llama_help_parser_reads_the_layout(llama_help):
    takes, allowed = llama_help
    assert takes["-c"] and takes["--ctx-size"] and takes["-t"] and takes["-ngl"] and takes["--n-gpu-layers"]
    assert takes["--kv-unified"] is False and takes["--cont-batching"] is False and takes["--metrics"] is False
    assert "q8_0" in allowed["--cache-type-k"] and "f16" in allowed["-ctv"]
    assert len(takes) > 150


def test_llama_server_knows_every_flag_we_may_write(llama_help):
    takes, _ = llama_help
    assert set(DEPLOY["llama.cpp"]["documented_flags"]) <= set(takes)
    assert set(DEPLOY["llama.cpp"]["flags"].values()) | {DEPLOY["llama.cpp"]["model"]} <= \
        set(DEPLOY["llama.cpp"]["documented_flags"])


def test_llama_server_takes_every_generated_command(llama_help):
    import llama_cpp
    from llama_cpp.server.settings import ModelSettings

    takes, allowed = llama_help
    ggml = {n[len("GGML_TYPE_"):].lower(): v for n, v in vars(llama_cpp).items() if n.startswith("GGML_TYPE_")}
    seen_types = set()
    for case, b in commands("llama.cpp"):
        argv = b.argv()
        assert argv[0] == "llama-server"
        toks, parsed, i = argv[1:], {}, 0
        while i < len(toks):
            flag = toks[i]
            assert flag in takes, (case, flag)
            if takes[flag]:
                assert i + 1 < len(toks) and not toks[i + 1].startswith("-"), (case, flag)
                parsed[flag] = toks[i + 1]
                i += 2
            else:
                parsed[flag] = None
                i += 1
        for flag in ("--cache-type-k", "--cache-type-v"):
            assert parsed[flag] in allowed[flag], (case, parsed[flag])
            seen_types.add(parsed[flag])
        assert parsed["-fa"] in ("on", "off", "auto")
        kw = {"model": parsed["-m"], "model_alias": parsed["--alias"], "n_ctx": parsed["-c"],
              "n_gpu_layers": parsed["-ngl"], "n_batch": parsed["-b"],
              "type_k": ggml[parsed["--cache-type-k"]], "type_v": ggml[parsed["--cache-type-v"]]}
        if "-t" in parsed:
            kw["n_threads"] = parsed["-t"]
        if parsed["-fa"] != "auto":
            kw["flash_attn"] = parsed["-fa"] == "on"
        s = ModelSettings(**kw)
        assert s.model == b.model_path and s.model.endswith(".gguf")
        assert s.n_ctx == int(values(b)["-c"]) >= 128
        assert s.n_gpu_layers in (0, 999) or 0 < s.n_gpu_layers < 999
        # the prompt batch is the plan's prefill chunk (llama.cpp's n_ubatch, 512), not llama-server's 2048 default
        assert s.n_batch == knowledge().planner.engines["llama.cpp"].prefill_chunk_tokens == 512
        assert s.n_threads is None or s.n_threads >= 1
        quantized = parsed["--cache-type-v"] not in ("f16", "bf16", "f32")
        assert (parsed["-fa"] == "on") == quantized, case  # a quantized V cache needs flash attention
    assert {"f16", "q8_0"} <= seen_types


# -------------------------------------------------------------------------------------------- transformers serve
@pytest.fixture(scope="module")
def serve_command():
    cli = pytest.importorskip("transformers.cli.transformers")
    app = cli.app
    cmd = app.get_command(click.Context(app), "serve")
    assert cmd is not None
    return cmd


def test_transformers_serve_knows_every_flag_we_may_write(serve_command):
    options = {o for p in serve_command.params for o in [*p.opts, *p.secondary_opts]}
    assert set(DEPLOY["pytorch"]["documented_flags"]) <= options


def test_transformers_serve_parses_every_generated_command(serve_command):
    for case, b in commands("pytorch"):
        argv = b.argv()
        assert argv[:2] == ["transformers", "serve"]
        ctx = serve_command.make_context("serve", argv[2:], resilient_parsing=False)  # parses; the server is not run
        p = ctx.params
        assert p["force_model"] == b.model_path
        assert p["host"] == "0.0.0.0" and p["port"] == b.port == 8000
        assert p["continuous_batching"] is True and p["trust_remote_code"] is False
        assert p["device"] == values(b)["--device"] and p["dtype"] == "auto"
    with pytest.raises(click.UsageError):  # and the check can fail
        serve_command.make_context("serve", ["/m", "--max-batch-size", "4"], resilient_parsing=False)


# ------------------------------------------------------------------------------------ SGLang / TensorRT-LLM tables
@functools.lru_cache(maxsize=None)
def table(engine: str) -> dict:
    return yaml.safe_load((TABLES / f"{engine}.yaml").read_text(encoding="utf-8"))


_TYPES = {"int": int, "float": float, "str": str}


def sglang_parser() -> argparse.ArgumentParser:
    """SGLang 0.5.23's option strings and arities, as an argparse parser (each action's aliases together)."""
    t = table("sglang")
    p = argparse.ArgumentParser(prog="sglang.launch_server", add_help=False, allow_abbrev=False, exit_on_error=False)
    for f in t["flags"]:
        spec = t["values"].get(f, {})
        if f in t["switches"]:
            p.add_argument(f, action="store_true")
        else:
            p.add_argument(f, nargs=t["nargs"].get(f), type=_TYPES[spec.get("type", "str")],
                           choices=spec.get("choices"))
    return p


def trtllm_command() -> click.Command:
    """trtllm-serve's `serve`, rebuilt from its table: the MODEL argument and every option."""
    t = table("tensorrt-llm")
    params: list[click.Parameter] = [click.Argument(["model"])]
    for f in t["flags"]:
        if f == "--help":
            continue
        spec = t["values"].get(f, {})
        kind = click.Choice(spec["choices"]) if "choices" in spec else _TYPES[spec.get("type", "str")]
        if f in t["switches"]:
            params.append(click.Option([f], is_flag=True))
        else:
            params.append(click.Option([f], type=kind, multiple=f in t.get("multiple", [])))
    return click.Command("serve", params=params, callback=lambda **_: None)


@pytest.mark.parametrize("engine", ["sglang", "tensorrt-llm"])
def test_the_flag_tables(engine):
    t = table(engine)
    assert t["version"] == DEPLOY[engine]["version"]
    assert str(t["read"]) == "2026-12-02" and t["source"].startswith("https://github.com/")
    flags = t["flags"]
    assert len(flags) == len(set(flags)) and all(f.startswith("-") for f in flags)
    assert set(t["switches"]) <= set(flags) and set(t["nargs"]) <= set(flags) and set(t["values"]) <= set(flags)
    documented = DEPLOY[engine]["documented_flags"]
    assert set(documented) <= set(flags), set(documented) - set(flags)
    assert set(DEPLOY[engine]["flags"].values()) <= set(documented)
    if DEPLOY[engine]["model"] != "positional":
        assert DEPLOY[engine]["model"] in documented
    assert not set(documented) & set(t["switches"])  # the generator gives each of them a value
    assert set(t["values"]) == set(documented)  # every flag we write has its type (and choices) in the table
    assert len(flags) > (500 if engine == "sglang" else 30)  # the whole CLI, not only what we write


def walk(argv: list[str], t: dict, positional: int) -> dict[str, list[str]]:
    """flag -> its values, checking each flag is in the table and each flag that takes a value has one."""
    toks, out, i = argv[positional:], {}, 0
    assert all(not x.startswith("-") for x in argv[:positional])
    while i < len(toks):
        flag = toks[i]
        assert flag in t["flags"], flag
        i += 1
        if flag in t["switches"]:
            out[flag] = []
            continue
        n = 1
        if t["nargs"].get(flag) in ("+", "*"):
            n = 0
            while i + n < len(toks) and not toks[i + n].startswith("-"):
                n += 1
        assert n >= 1 and i + n <= len(toks) and not any(x.startswith("-") for x in toks[i:i + n]), flag
        out[flag] = toks[i:i + n]
        i += n
    return out


def test_sglang_takes_every_generated_command():
    t = table("sglang")
    parser = sglang_parser()
    cmds = commands("sglang")
    for case, b in cmds:
        argv = b.argv()
        assert argv[:3] == ["python3", "-m", "sglang.launch_server"]
        seen = walk(argv[3:], t, 0)
        ns = parser.parse_args(argv[3:])
        assert ns.model_path == b.model_path and ns.host == "0.0.0.0" and ns.port == b.port == 30000
        v = values(b)
        assert ns.served_model_name == v["--served-model-name"]
        assert ns.context_length == int(v["--context-length"]) and ns.max_running_requests >= 1
        assert 0 < ns.mem_fraction_static < 1
        assert ns.tp_size == int(v["--tp-size"])
        # one data-parallel replica per server, or attention data-parallel over all its GPUs with the experts spread
        assert ns.dp_size == 1 or (ns.dp_size is None and ns.attn_dp_size == ns.ep_size == ns.tp_size > 1)
        assert ns.kv_cache_dtype in t["values"]["--kv-cache-dtype"]["choices"]
        assert set(seen) == set(v) | {"--model-path"}
    assert any(values(b)["--kv-cache-dtype"] == "fp8_e4m3" for _, b in cmds)
    assert any(values(b)["--tp-size"] != "1" for _, b in cmds)
    with pytest.raises((argparse.ArgumentError, SystemExit)):  # and the check can fail
        parser.parse_args(["--model-path", "/m", "--kv-cache-dtype", "fp8"])


def test_tensorrt_llm_takes_every_generated_command():
    t = table("tensorrt-llm")
    cmd = trtllm_command()
    cmds = commands("tensorrt-llm")
    for case, b in cmds:
        argv = b.argv()
        assert argv[0] == "trtllm-serve" and argv[1] not in ("serve", "grpc", "disaggregated")  # serve, by default
        seen = walk(argv[1:], t, 1)
        p = cmd.make_context("serve", argv[1:]).params
        v = values(b)
        assert p["model"] == b.model_path and p["host"] == "0.0.0.0" and p["port"] == b.port == 8000
        assert p["backend"] == "pytorch"
        assert p["max_seq_len"] == int(v["--max_seq_len"]) and p["max_batch_size"] >= 1
        assert 0 < p["kv_cache_free_gpu_memory_fraction"] <= 1
        assert p["tp_size"] == int(v["--tp_size"]) and p["pp_size"] == int(v["--pp_size"])
        assert set(seen) == set(v)
        if b.extra_files:  # chunked prefill is off by default in trtllm-serve; the KV dtype only goes there too
            assert p["extra_llm_api_options"] in b.extra_files
            opts = yaml.safe_load(b.extra_files[p["extra_llm_api_options"]])
            assert opts["enable_chunked_prefill"] is True
            want = "fp8" if b.args and any("FP8" in a.why or "fp8" in a.why for a in b.args) else None
            assert (opts.get("kv_cache_config") or {}).get("dtype") in ({want} if want else {None, "fp8"})
    assert any("kv_cache_config" in "".join(b.extra_files.values()) for _, b in cmds)  # the 70B's FP8 KV
    assert any(values(b)["--tp_size"] != "1" for _, b in cmds)
    with pytest.raises(click.UsageError):  # and the check can fail
        cmd.make_context("serve", ["/m", "--tp", "2"])
