"""Bounds in the probes and no surviving child (issue 19, High 7-10 and the sweep cap): every JSON/YAML reader says
"nested too deeply" in one line, a result that claims ok without figures and a sweep of more than 1,024 levels are
refused at load, a stopped engine child dies with its killed parent (and its llama-server with it), and a context
the model was not trained for, or a KV cache that does not fit, is refused before anything is allocated."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
import yaml
from pydantic import ValidationError

from probes.result import ProbeResult
from probes.sweep_result import MAX_LEVELS, SweepResult
from probes.workload import ModelShape, PromptLine, model_shape, parse_prompts_jsonl, prompts_over_context
from tests.hostile.kit import ROOT, bounded, gguf_file, llama_kvs, u32

DEEP = 100_000
SMOLLM2_CONTEXT = 8192


def _answers(tmp_path):
    p = tmp_path / "answers.yaml"  # a named target: nothing is measured on this machine first
    p.write_text("concurrency: 1\nttft_p95_ms: 1000\nmodel: {params_b: 1.0}\n"
                 "hardware: {gpu_vendor: nvidia, gpu_model: RTX 4090, gpu_count: 1, gpu_memory_gb: 24}\n")
    return p


def _report(tmp_path, flag: str, path) -> list[str]:
    return ["-m", "advisor", "report", "--answers", str(_answers(tmp_path)), flag, str(path),
            "--out", str(tmp_path / "r.md")]


# ------------------------------------------------------------------------------------------ High 7: nested too deeply
def test_a_prompts_line_nested_100000_deep_is_one_line(tmp_path):
    f = tmp_path / "deep.jsonl"
    f.write_text('{"prompt": "fine"}\n{"prompt": ' + "[" * DEEP + "]" * DEEP + "}\n")
    o = bounded(["-m", "probes", "run", "--engine", "llama.cpp", "--prompts", str(f)])
    line = o.one_line_error()
    assert "line 2" in line and "nested too deeply" in line, line


@pytest.mark.parametrize("flag", ["--probe", "--sweep"])
def test_a_result_file_nested_100000_deep_is_one_line(tmp_path, flag):
    f = tmp_path / "deep.json"
    f.write_text('{"engine": ' + "[" * DEEP + "]" * DEEP + "}")
    line = bounded(_report(tmp_path, flag, f)).one_line_error()
    assert "nested too deeply" in line and str(f) in line, line


def test_an_answers_file_nested_too_deeply_is_one_line(tmp_path):
    """Held before (answers.py catches it; libyaml caps flow nesting at 1,000): kept as the contract."""
    f = tmp_path / "answers.yaml"
    f.write_text("concurrency: 1\nttft_p95_ms: 1000\nmodel: " + "{<<: " * 990 + "{b: 1}" + "}" * 990 + "\n")
    line = bounded(["-m", "advisor", "recommend", "--answers", str(f)]).one_line_error()
    assert "nested too deeply" in line or "nesting depth" in line, line


def test_yaml_nested_past_the_recursion_limit_is_a_yaml_error():
    """Merge keys inside merge keys recurse in the constructor: the shared loader turns that into a YAMLError, so
    every reader's own `except yaml.YAMLError` says it in one line."""
    from advisor.knowledge.yamlsafe import UniqueKeyLoader

    text = "a: " + "{<<: " * 900 + "{b: 1}" + "}" * 900
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(400)
    try:
        with pytest.raises(yaml.YAMLError, match="nested too deeply"):
            yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a safe loader)
    finally:
        sys.setrecursionlimit(old)


# ------------------------------------------------------------------------------------------ High 8: ok without figures
def test_an_ok_result_without_figures_is_refused_by_the_report(tmp_path):
    f = tmp_path / "ok.json"
    f.write_text('{"engine":"endpoint","status":"ok"}')
    line = bounded(_report(tmp_path, "--probe", f)).one_line_error()
    assert 'status "ok" without the figures' in line, line


def test_an_ok_result_needs_its_figures():
    with pytest.raises(ValidationError, match="without the figures"):
        ProbeResult.model_validate_json('{"engine":"endpoint","status":"ok"}')
    with pytest.raises(ValidationError, match="without the figures"):  # requests ran, none finished ok
        ProbeResult(engine="x", status="ok", requests_total=4, requests_ok=0, ttft_ms={"p95": 10.0})
    ok = ProbeResult(engine="x", status="ok", requests_total=4, requests_ok=4, ttft_ms={"p50": 5.0, "p95": 10.0})
    assert ProbeResult.model_validate_json(ok.model_dump_json()).ttft_ms.p95 == 10.0
    assert ProbeResult.model_validate({"engine": "x", "status": "error"}).status == "error"  # not measured: fine


def test_a_result_holds_at_most_max_requests():
    from probes.validation import MAX_REQUESTS

    rec = {"index": 0, "submitted_s": 0.0}
    with pytest.raises(ValidationError, match="at most 10,000 requests"):
        ProbeResult.model_validate({"engine": "x", "status": "error", "requests": [rec] * (MAX_REQUESTS + 1)})


# ------------------------------------------------------------------------------------------ sweep files capped
def test_a_sweep_of_more_than_1024_levels_is_refused_in_one_line(tmp_path):
    f = tmp_path / "sweep.json"
    f.write_text(json.dumps({"engine": "x", "status": "ok",
                             "levels": [{"concurrency": 1, "status": "error"}] * (MAX_LEVELS + 1)}))
    line = bounded(_report(tmp_path, "--sweep", f)).one_line_error()
    assert "at most 1,024 levels, this one has 1,025 levels" in line, line


def test_a_sweep_of_1024_levels_loads():
    levels = [{"concurrency": c, "status": "error"} for c in range(1, MAX_LEVELS + 1)]
    assert len(SweepResult.model_validate({"engine": "x", "status": "ok", "levels": levels}).levels) == MAX_LEVELS
    with pytest.raises(ValidationError, match="1,025 run_ids"):
        SweepResult.model_validate({"engine": "x", "status": "ok", "run_ids": [1] * (MAX_LEVELS + 1)})
    with pytest.raises(ValidationError, match="1,025 results"):  # one full result per level, no more
        SweepResult.model_validate_json(json.dumps({"engine": "x", "status": "ok",
                                                    "results": [{"engine": "x", "status": "error"}] * 1025}))


# ------------------------------------------------------------------------------------------ High 10: context and KV
def test_input_beyond_the_trained_context_is_refused_before_loading():
    """131,000 input tokens on the bundled 8k model: once a 3 GB KV cache, then the refusal; now the refusal alone,
    from the GGUF header, before the engine's process starts."""
    o = bounded(["-m", "probes", "run", "--engine", "llama.cpp", "--input-tokens", "131000", "--format", "text"])
    line = o.one_line_error()
    assert "131,000 input + 32 output tokens" in line and f"trained context of {SMOLLM2_CONTEXT:,} tokens" in line


def test_run_probe_refuses_beyond_the_context_without_a_child():
    from probes.result import ProbeSettings
    from probes.runner import run_probe

    events: list = []
    t0 = time.monotonic()
    res = run_probe(ProbeSettings(engine="llama.cpp", input_tokens=131_000, output_tokens=64), on_event=events.append)
    assert time.monotonic() - t0 < 10
    assert res.status == "error" and "trained context of 8,192 tokens" in res.reason, res.reason
    assert not any(e.get("type") == "started" for e in events)  # no engine process at all
    assert res.peak_rss_mb is None  # nothing ran, nothing measured


def test_the_bundled_models_shape_and_its_kv_cache():
    from probes.models import default_model

    shape = model_shape(default_model())
    assert shape.context_tokens == SMOLLM2_CONTEXT
    assert shape.kv_elements_per_token == 2 * 30 * 3 * 64  # 2 × layers × kv_heads × head_dim (576 / 9)
    assert shape.kv_cache_mb(131_328, 2) == pytest.approx(2885.6, abs=0.1)  # the 3 GB the refusal once cost


def test_hf_and_onnx_configs_give_the_shape(tmp_path):
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({
        "model_type": "llama", "max_position_embeddings": 32768, "num_hidden_layers": 28, "num_attention_heads": 28,
        "num_key_value_heads": 4, "hidden_size": 3584,
        "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}))
    s = model_shape(hf)
    assert s == ModelShape(131072, 2 * 28 * 4 * 128, str(hf / "config.json"))
    onnx = tmp_path / "onnx"
    onnx.mkdir()
    (onnx / "model.onnx").write_bytes(b"")
    (onnx / "genai_config.json").write_text(json.dumps({"model": {"context_length": 8192, "decoder": {
        "num_hidden_layers": 30, "num_key_value_heads": 3, "head_size": 64}}}))
    assert model_shape(onnx).kv_elements_per_token == 2 * 30 * 3 * 64
    (hf / "config.json").write_text("[" * DEEP + "]" * DEEP)
    assert model_shape(hf) is None  # unreadable: the engine's own load says why, never a RecursionError here


def _big_kv_gguf(tmp_path):
    """A header claiming an 80-layer, 128k-context model (KV 320 KiB a token): 37 GB of KV at 120k tokens."""
    return gguf_file(tmp_path / "big.gguf", llama_kvs(**{
        "llama.block_count": u32("llama.block_count", 80),
        "llama.embedding_length": u32("llama.embedding_length", 8192),
        "llama.attention.head_count": u32("llama.attention.head_count", 64),
        "llama.context_length": u32("llama.context_length", 131072)}) +
        [u32("llama.attention.head_count_kv", 8)])


def test_the_memory_refusal_counts_the_kv_cache(tmp_path):
    """The weights (a few KB here) fit anywhere; the KV cache of the context asked for does not. The margin is set
    so that only the KV cache can tip it, on any machine."""
    model = _big_kv_gguf(tmp_path)
    assert model_shape(model).kv_elements_per_token == 2 * 80 * 8 * 128
    margin = 2048 / (psutil.virtual_memory().available / 2**20)  # 2 GB may be used: weights + 150 MB fit
    o = bounded(["-m", "probes", "run", "--engine", "llama.cpp", "--model", str(model), "--input-tokens", "120000",
                 "--format", "text"], env={"PROBE_MEMORY_MARGIN": f"{margin:.6f}"})
    lines = [ln for ln in o.out.splitlines() if ln.strip()]
    assert o.rc == 1 and len(lines) == 1, (o.out[-600:], o.err[-600:])
    assert "refused" in lines[0] and "KV cache of 120,064 tokens" in lines[0], lines[0]
    assert o.within_bounds(10, 1024), (o.cpu_seconds, o.peak_rss_mb)


def test_n_ctx_is_capped_at_the_trained_context(tmp_path):
    pytest.importorskip("llama_cpp")
    from probes.backends.llama_cpp import LlamaCppBackend
    from probes.models import default_model
    from probes.result import ProbeSettings

    b = LlamaCppBackend()
    s = ProbeSettings(engine="llama.cpp", input_tokens=100_000, input_tokens_sd=10)  # a spread: clipped to fit
    assert b._n_ctx(default_model(), s) == (SMOLLM2_CONTEXT, SMOLLM2_CONTEXT)
    assert b._n_ctx(default_model(), ProbeSettings(engine="llama.cpp", extra={"n_ctx": 65536}))[0] == SMOLLM2_CONTEXT
    assert b._n_ctx(default_model(), ProbeSettings(engine="llama.cpp"))[0] == 2048


def test_a_prompts_file_prompt_over_the_context_is_refused_before_the_run(tmp_path):
    """A 199k-character prompt on the 8k model once took 2.6 GB and ran to the timeout: now it is counted in the
    engine's tokenizer after load and refused, naming its line, before any request is sent."""
    f = tmp_path / "prompts.jsonl"
    f.write_text(json.dumps({"prompt": "hi there"}) + "\n\n" + json.dumps({"prompt": "word " * 39_800}) + "\n")
    o = bounded(["-m", "probes", "run", "--engine", "llama.cpp", "--prompts", str(f), "--requests", "4"])
    assert o.rc == 1, o.err[-600:]
    res = ProbeResult.model_validate_json(o.out)
    assert res.status == "error" and res.requests == [] and "\n" not in res.reason
    assert res.reason.startswith("prompts file line 3: the prompt is 39,8"), res.reason
    assert f"the model's context of {SMOLLM2_CONTEXT:,} tokens" in res.reason
    assert o.within_bounds(10, 1024), (o.cpu_seconds, o.peak_rss_mb)


def test_prompts_over_context_takes_any_count_function():
    lines = parse_prompts_jsonl(b'{"prompt": "a b"}\n\n{"prompt": "a b c d e f", "max_tokens": 4}\n')
    assert lines == [("a b", None), ("a b c d e f", 4)] and [ln.line for ln in lines] == [1, 3]
    words = lambda t: len(t.split()) + 10  # noqa: E731 (a template of 10 tokens)
    assert prompts_over_context(lines, words, 28, out_tokens=4) is None  # line 3: 16 + its 4 + 8 = 28
    msg = prompts_over_context(lines, words, 27, out_tokens=4)  # line 1 (12 + 4 + 8) fits, line 3 does not
    assert msg.startswith("prompts file line 3: the prompt is 16 tokens") and "context of 27 tokens" in msg
    assert prompts_over_context(lines, words, 27, out_tokens=4, n_used=1) is None  # line 3 is never sent
    assert prompts_over_context(lines, lambda t: None, 1, out_tokens=4) is None  # cannot count: not refused
    assert isinstance(lines[0], PromptLine) and lines[0][0] == "a b"


# ------------------------------------------------------------------------------------------ High 9: no survivor
def _probe_child(parent_pid: int) -> psutil.Process | None:
    for p in psutil.process_iter(["cmdline"]):
        try:
            if "probes.child" in " ".join(p.info["cmdline"] or []) and \
                    p.environ().get("PROBE_PARENT_PID") == str(parent_pid):
                return p
        except psutil.Error:
            continue
    return None


def _group(pgid: int) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (psutil.Error, OSError):
            continue
    return out


@pytest.mark.slow
@pytest.mark.parametrize("concurrency", [1, 2], ids=["in-process", "llama-server"])
def test_a_stopped_child_dies_with_its_killed_parent(concurrency, tmp_path):
    """SIGSTOP freezes the child's watchdog thread; the kernel's PR_SET_PDEATHSIG still reaches it, and llama-server
    (its child, in its group) carries its own, so the whole group goes with the parent."""
    if concurrency > 1:
        from probes.backends.llama_cpp import llama_server_binary

        if llama_server_binary() is None:
            pytest.skip("llama-server is not built here (make llama-server)")
    parent = subprocess.Popen([sys.executable, "-m", "probes", "run", "--engine", "llama.cpp", "--requests", "500",
                               "--max-tokens", "64", "--concurrency", str(concurrency), "--format", "text"],
                              cwd=str(ROOT), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    group: list[psutil.Process] = []
    try:
        end = time.monotonic() + 60
        child = None
        while child is None and time.monotonic() < end:
            assert parent.poll() is None, f"the parent exited early ({parent.returncode})"
            child = _probe_child(parent.pid)
            time.sleep(0.1)
        assert child is not None, "the probe child never started"
        pgid = os.getpgid(child.pid)
        want = 2 if concurrency > 1 else 1
        while len(_group(pgid)) < want and time.monotonic() < end:  # llama-server started by the child
            time.sleep(0.1)
        time.sleep(1.0)  # well inside load or generation
        group = _group(pgid)
        assert len(group) >= want, [p.name() for p in group]
        os.kill(child.pid, signal.SIGSTOP)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        t0 = time.monotonic()
        while _group(pgid) and time.monotonic() - t0 < 5:
            time.sleep(0.05)
        left = _group(pgid)
        assert not left, f"{[p.name() for p in left]} outlived their SIGKILLed parent by 5 s"
    finally:
        if parent.poll() is None:
            parent.kill()
        for p in group:
            try:
                p.kill()
            except psutil.Error:
                pass


def test_die_with_parent_checks_the_parent_is_still_the_original():
    """Run in a child of its own (the call sets PR_SET_PDEATHSIG on whoever makes it)."""
    code = ("import os; from probes.backends.base import die_with_parent; "
            "print(die_with_parent(os.getppid()), die_with_parent(os.getppid() + 1_000_000))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), timeout=30)
    assert p.stdout.split() == ["True", "False"], p.stderr
