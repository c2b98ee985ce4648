"""The user's workload in tokens: prompts fitted in each engine's own tokenizer (±1 after its chat template),
exact output lengths, a seeded spread, presets, and the prompts file's validation.

The engine runs go through the CLI contract (JSON on stdout) and assert on the raw records."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from probes import workload as wl
from probes.result import ProbeResult, ProbeSettings
from probes.validation import parse_input_tokens, workload_error
from probes.workload import PromptsFileError, parse_prompts_jsonl

ROOT = Path(__file__).resolve().parents[2]


def probe(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "probes", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


def _exact(p, n_in: int, n_out: int, requests: int) -> dict:
    assert p.returncode == 0, p.stderr[-2000:] + p.stdout[-2000:]
    res = json.loads(p.stdout)
    assert res["status"] == "ok", res["reason"]
    recs = res["requests"]
    assert len(recs) == requests
    for r in recs:
        assert r["status"] == "ok", r["error"]
        assert abs(r["prompt_tokens"] - n_in) <= 1, [q["prompt_tokens"] for q in recs]
        assert r["output_tokens"] == n_out == len(r["token_times_s"])
    assert any(f"exactly {n_out} tokens per request" in n for n in res["notes"])
    return res


# ------------------------------------------------------------------------------------------ every engine, for real
def test_llama_cpp_exact_prompt_and_output_tokens():
    res = _exact(probe("run", "--engine", "llama.cpp", "--input-tokens", "256", "--output-tokens", "64",
                       "--requests", "3", "--warmup", "0"), 256, 64, 3)
    assert res["settings"]["input_tokens"] == 256 and res["settings"]["output_tokens"] == 64
    assert any("counted in the engine's own tokenizer" in n for n in res["notes"])


def test_onnxruntime_exact_prompt_and_output_tokens():
    _exact(probe("run", "--engine", "onnxruntime", "--input-tokens", "256", "--output-tokens", "64",
                 "--requests", "3", "--warmup", "0"), 256, 64, 3)


def test_pytorch_exact_prompt_and_output_tokens():
    _exact(probe("run", "--engine", "pytorch", "--input-tokens", "256", "--output-tokens", "64",
                 "--requests", "2", "--warmup", "0"), 256, 64, 2)


def test_vllm_exact_prompt_and_output_tokens(vllm_run):
    row, run = vllm_run  # the session's one vLLM probe (tests/probes/conftest.py)
    if run is None:
        pytest.skip(f"vLLM is not available here: {row['reason']}")
    _exact(run, 256, 64, 4)


def test_a_spread_is_the_seeded_lengths_on_the_engine():
    p = probe("run", "--engine", "llama.cpp", "--input-tokens", "200:60", "--output-tokens", "4", "--requests", "5",
              "--warmup", "1", "--seed", "7")
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads(p.stdout)
    want = wl.input_lengths(5, 200, 60, 7)
    got = [r["prompt_tokens"] for r in res["requests"]]
    assert all(abs(g - w) <= 1 for g, w in zip(got, want)), (got, want)
    assert len(set(want)) > 1 and all(r["output_tokens"] == 4 for r in res["requests"])
    assert any("normal(mean 200, stddev 60) tokens seeded by 7" in n for n in res["notes"])


def test_prompts_file_on_the_engine_cycles_and_keeps_each_lines_output(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps({"prompt": "Name three rivers.", "max_tokens": 3}) + "\n\n"
                 + json.dumps({"prompt": "Explain what a compiler does, in one sentence."}) + "\n", encoding="utf-8")
    p = probe("run", "--engine", "llama.cpp", "--prompts", str(f), "--output-tokens", "5", "--requests", "3",
              "--warmup", "0")
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads(p.stdout)
    assert [r["output_tokens"] for r in res["requests"]] == [3, 5, 3]
    pt = [r["prompt_tokens"] for r in res["requests"]]
    assert pt[0] == pt[2] != pt[1] and all(n > 5 for n in pt)
    assert any("2 from p.jsonl" in n and "cycle through them" in n for n in res["notes"])


# ------------------------------------------------------------------------------------------ fitting and openings
@pytest.fixture(scope="module")
def llama(gguf):
    from probes.backends.llama_cpp import LlamaCppBackend

    b = LlamaCppBackend()
    b.load(gguf, "gguf", ProbeSettings(engine="llama.cpp", extra={"n_ctx": 8192}))
    yield b
    b.close()


def test_fitting_is_exact_across_lengths_and_openings_are_distinct(llama):
    lengths = [48, 64, 100, 255, 256, 257, 777, 1500, 4000]
    prompts, got = wl.fitted_prompts(llama.count_prompt_tokens, lengths, 16, 1234)
    assert all(abs(g - n) <= 1 for g, n in zip(got, lengths)), list(zip(lengths, got))
    assert [llama.count_prompt_tokens(p.text) for p in prompts] == got
    heads = [tuple(llama.llm.tokenize(p.text.encode(), add_bos=False)[:8]) for p in prompts]
    assert len(set(heads)) == len(heads)  # no two prompts share their first 8 tokens
    # deterministic: the same seed gives the same prompts
    assert wl.fitted_prompts(llama.count_prompt_tokens, lengths[:3], 16, 1234)[0] == prompts[:3]


def test_below_the_chat_template_the_shortest_opening_is_kept(llama):
    f = wl.fit_prompt(llama.count_prompt_tokens, wl.opening(3, 1234), 16)
    assert f.text.startswith("Request 3 of run 1234:") and f.tokens > 16  # SmolLM2's template alone is ~30


def test_fit_with_multi_token_words_pads_by_whole_tokens():
    # a toy tokenizer: a template of 7 tokens, and every word costs len(word) // 3 + 1 tokens
    def count(text):
        return 7 + sum(len(w) // 3 + 1 for w in text.split()) + text.count(".") + text.count(",")

    for n in range(20, 400, 7):
        f = wl.fit_prompt(count, wl.opening(n, 1), n)
        assert abs(f.tokens - n) <= 1 and count(f.text) == f.tokens, (n, f.tokens)


# ------------------------------------------------------------------------------------------ spread and presets
def test_spread_is_seeded_reproducible_and_clipped():
    a = wl.input_lengths(500, 1500, 300, 42, upper=2000)
    assert a == wl.input_lengths(500, 1500, 300, 42, upper=2000)
    assert a != wl.input_lengths(500, 1500, 300, 43, upper=2000)
    assert min(a) >= wl.MIN_INPUT_TOKENS and max(a) == 2000  # ~5% of normal(1500, 300) lies above 2000
    mid = sorted(a)[250]
    assert 1400 < mid < 1600
    assert wl.input_lengths(3, 100, None, 1) == [100, 100, 100]
    assert min(wl.input_lengths(200, 30, 40, 1)) == wl.MIN_INPUT_TOKENS
    assert parse_input_tokens("1500:300") == (1500, 300) and parse_input_tokens("256") == (256, None)


def test_presets_fill_what_is_not_given():
    assert set(wl.PRESETS) == {"chat", "rag", "summarize", "code"}
    for name, p in wl.PRESETS.items():
        s = ProbeSettings(engine="llama.cpp", preset=name)
        assert (s.input_tokens, s.input_tokens_sd, s.output_tokens) == (
            p["input_tokens"], p["input_tokens_sd"], p["output_tokens"])
        assert workload_error(s.input_tokens, s.input_tokens_sd, s.output_tokens, None, name) is None
    s = ProbeSettings(engine="llama.cpp", preset="rag", input_tokens=3000, output_tokens=200)
    assert (s.input_tokens, s.input_tokens_sd, s.output_tokens) == (3000, None, 200)
    assert wl.output_tokens(ProbeSettings(engine="llama.cpp", max_tokens=9)) == 9
    assert wl.output_tokens(ProbeSettings(engine="llama.cpp", max_tokens=9, output_tokens=5)) == 5


def test_old_stored_results_still_load():
    old = {"engine": "llama.cpp", "requests": 4, "concurrency": 1, "max_tokens": 16, "prompt_mix": "short",
           "ttft_target_ms": 1000.0, "warmup": 1, "timeout_s": 300, "seed": 1234, "extra": {}}
    s = ProbeSettings.model_validate_json(json.dumps(old))
    assert s.input_tokens is s.output_tokens is s.prompts_file is s.preset is None
    res = ProbeResult.model_validate({"engine": "llama.cpp", "status": "ok", "ttft_ms": {"p95": 50.0}, "settings": old})
    assert res.settings.max_tokens == 16


def test_preset_on_the_cli_fills_the_settings():
    p = probe("run", "--engine", "tensorrt-llm", "--preset", "summarize")  # unavailable here: exit 3, fast
    assert p.returncode in (0, 1, 3), p.stderr
    s = json.loads(p.stdout)["settings"]
    assert (s["preset"], s["input_tokens"], s["input_tokens_sd"], s["output_tokens"]) == ("summarize", 1024, 256, 256)


# ------------------------------------------------------------------------------------------ validation
def _line(tmp_path, text: bytes) -> str:
    f = tmp_path / "p.jsonl"
    f.write_bytes(text)
    return str(f)


JSONL_CASES = [
    (b'{"prompt": "a"}\n{"prompt": "b"\n', "prompts file line 2: not valid JSON"),
    (b'{"prompt": "a"}\n["a"]\n', "prompts file line 2: expected a JSON object"),
    (b'{"prompt": "a", "temperature": 1}\n', "prompts file line 1: unknown key 'temperature'"),
    (b'{"prompt": "a"}\n\n{"prompt": "b", "max_tokens": 0}\n', "prompts file line 3: \"max_tokens\" must be"),
    (b'{"prompt": "a", "max_tokens": true}\n', "prompts file line 1: \"max_tokens\" must be"),
    (b'{"prompt": "a", "max_tokens": 8193}\n', "prompts file line 1: \"max_tokens\" must be"),
    (b'{"prompt": ""}\n', "prompts file line 1: \"prompt\" must be a non-empty string"),
    (b'{"prompt": 5}\n', "prompts file line 1: \"prompt\" must be a non-empty string"),
    (b'{"prompt": "a"}\n{"prompt": "\xff\xfe"}\n', "prompts file line 2: not UTF-8"),
    (b'{"prompt": "a", "max_tokens": NaN}\n', "prompts file line 1: not valid JSON"),
    (b"\n\n", "prompts file: no prompts"),
    (b'{"prompt": "' + b"x" * 200_001 + b'"}\n', "prompts file line 1: the prompt has 200,001 characters"),
    (b'{"prompt": "a"}\n' * 10_001, "prompts file: more than 10,000 lines"),
]


@pytest.mark.parametrize("text,message", JSONL_CASES, ids=[m.split(":")[-1][:30] for _, m in JSONL_CASES])
def test_prompts_file_validation(tmp_path, text, message):
    with pytest.raises(PromptsFileError) as info:
        parse_prompts_jsonl(text)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    assert workload_error(prompts_file=_line(tmp_path, text)).startswith(message)


def test_prompts_file_accepts_ten_thousand_lines_and_a_bom():
    ok = b"\xef\xbb\xbf" + b'{"prompt": "a", "max_tokens": 2}\n' * 10_000
    lines = parse_prompts_jsonl(ok)
    assert len(lines) == 10_000 and lines[0] == ("a", 2)


def test_prompts_file_size_cap(tmp_path):
    f = tmp_path / "big.jsonl"
    with open(f, "wb") as out:
        out.truncate(8 * 2**20 + 1)
    assert "over the 8 MiB limit" in workload_error(prompts_file=str(f))
    assert "No such file" in workload_error(prompts_file=str(tmp_path / "missing.jsonl"))


@pytest.mark.parametrize("args,message", [
    (["--input-tokens", "0"], "input tokens must be between 1 and 131,072"),
    (["--input-tokens", "131073"], "input tokens must be between 1 and 131,072"),
    (["--input-tokens", "12x"], "input tokens must be N or MEAN:STDDEV"),
    (["--input-tokens", "100:200"], "stddev must be between 0 and the mean"),
    (["--output-tokens", "0"], "output tokens must be between 1 and 8,192"),
    (["--output-tokens", "8193"], "output tokens must be between 1 and 8,192"),
    (["--preset", "poetry"], "unknown preset 'poetry'"),
    (["--input-tokens", "100", "--prompt-mix", "long"], "--prompt-mix is the legacy workload"),
    (["--prompts", "PROMPTS", "--input-tokens", "100"], "--prompts and --input-tokens both set the prompts"),
    (["--prompts", "PROMPTS", "--preset", "chat"], "--prompts and --preset both set the prompts"),
    (["--prompts", "BAD"], "prompts file line 2: unknown key 'system'"),
])
def test_bad_workload_arguments_exit_2_with_one_line(tmp_path, args, message):
    good = _line(tmp_path, b'{"prompt": "a"}\n')
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"prompt": "a"}\n{"prompt": "b", "system": "x"}\n')
    args = [good if a == "PROMPTS" else str(bad) if a == "BAD" else a for a in args]
    p = probe("run", "--engine", "llama.cpp", *args)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert message in lines[0]


# ------------------------------------------------------------------------------------------ endpoint
def test_endpoint_fits_prompts_with_the_servers_tokenizer(llama_server):
    from probes.runner import run_probe

    res = run_probe(ProbeSettings(engine="endpoint", endpoint=llama_server, input_tokens=128, output_tokens=12,
                                  requests=3, concurrency=1, warmup=0, timeout_s=300))
    assert res.status == "ok", res.reason
    assert all(r.status == "ok" and abs(r.prompt_tokens - 128) <= 1 for r in res.requests), \
        [(r.status, r.prompt_tokens, r.error) for r in res.requests]
    assert all(r.output_tokens == 12 for r in res.requests), [r.output_tokens for r in res.requests]
    assert any("POST /extras/tokenize (llama-cpp-python's server)" in n for n in res.notes), res.notes
    # llama-cpp-python streams no usage: the records' prompt_tokens are counted after the run, by the server
    assert any("counted after the run with the server's own tokenizer" in n for n in res.notes), res.notes


class _NoTokenizer(__import__("http.server").server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server without a tokenize endpoint: 20 tokens of chat template + 1.5 per word, and
    streams that stop after 5 tokens whatever max_tokens, ignore_eos or min_tokens ask."""

    def log_message(self, *a):
        pass

    def _json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._json(200, {"object": "list", "data": [{"id": "fake"}]})

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if self.path != "/v1/chat/completions":
            return self._json(404, {"detail": "Not Found"})
        usage = {"prompt_tokens": 20 + round(1.5 * len(req["messages"][0]["content"].split())),
                 "completion_tokens": 5}
        if not req.get("stream"):
            return self._json(200, {"choices": [{"message": {"content": "x"}, "finish_reason": "length"}],
                                    "usage": {**usage, "completion_tokens": 1}})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i in range(5):
            self.wfile.write(f"data: {json.dumps({'choices': [{'delta': {'content': f't{i}'}}]})}\n\n".encode())
        self.wfile.write(f"data: {json.dumps({'choices': [{'delta': {}, 'finish_reason': 'stop'}]})}\n\n".encode())
        self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\ndata: [DONE]\n\n".encode())


def test_endpoint_without_a_tokenizer_approximates_and_an_early_stop_is_incomplete():
    import http.server
    import threading

    from probes.runner import run_probe

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NoTokenizer)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        res = run_probe(ProbeSettings(engine="endpoint", endpoint=f"http://127.0.0.1:{srv.server_address[1]}",
                                      input_tokens=300, output_tokens=12, requests=2, warmup=0, timeout_s=120))
    finally:
        srv.shutdown()
    assert res.status == "error" and res.requests_incomplete == 2
    assert all(r.error == "incomplete: the server finished the stream after 5 of 12 tokens" for r in res.requests)
    assert all(abs(r.prompt_tokens - 300) <= 2 for r in res.requests)  # the server's usage, of an approximation
    assert any("no tokenize endpoint" in n and "1.500 tokens per word" in n for n in res.notes), res.notes
    assert any("approximated" in n for n in res.notes if n.startswith("prompts:"))
