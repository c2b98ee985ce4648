"""The endpoint probe names the server it measured (ProbeResult.server_kind / server_version) from what the server
answers, and a verdict counts a recognised server as a measurement of the engine it is.

Each stub answers as that server's own source or docs say it does (the URL beside each), streams a short chat
completion, and records what it was asked. The real probe runs against it (run_probe: the child process, as the
other endpoint tests). A server that names itself nowhere, or answers its version route with a hang, 10 MB, a
redirect or markup, still measures, within the stall bound.
"""
from __future__ import annotations

import http.server
import json
import threading
import time

import pytest

from probes.result import ProbeResult, ProbeSettings
from probes.runner import run_probe
from tests.hostile.kit import stream_chat

MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
KEY = "sk-KINDTEST-4d5e6f7a"


def _card(**kw) -> dict:
    return {"id": MODEL, "object": "model", "created": 1767225600, **kw}


def _json(obj) -> tuple[int, dict, bytes]:
    return 200, {"Content-Type": "application/json"}, json.dumps(obj).encode()


# ---------------------------------------------------------------------------------------------- the servers
# path → (status, headers, body) or a callable(handler) that answers itself; "server": the Server header of every
# answer (uvicorn's for the Python servers, none documented for the others)
SERVERS = {
    # https://github.com/vllm-project/vllm vllm/entrypoints/openai/engine/protocol.py (ModelCard) and
    # vllm/frontend/entrypoints/serve/instrumentator/basic.py (GET /version)
    "vllm": {"server": "uvicorn",
             "/v1/models": _json({"object": "list", "data": [_card(owned_by="vllm", root=MODEL, parent=None,
                                                                      max_model_len=2048, permission=[])]}),
             "/version": _json({"version": "0.11.0"})},
    # https://docs.sglang.io/basic_usage/native_api.html (GET /server_info: the server args and "version")
    "sglang": {"server": "uvicorn",
               "/v1/models": _json({"object": "list", "data": [_card(owned_by="sglang", root=MODEL,
                                                                        max_model_len=2048)]}),
               "/server_info": _json({"model_path": MODEL, "tp_size": 1, "device": "cuda", "internal_states": [{}],
                                      "version": "0.5.6"})},
    # https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md (GET /props; `Server: llama.cpp`)
    "llama-server": {"server": "llama.cpp",
                     "/v1/models": _json({"models": [{"name": MODEL, "model": MODEL}], "object": "list",
                                          "data": [_card(owned_by="llamacpp", meta={"n_ctx_train": 8192})]}),
                     "/props": _json({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 4,
                                      "model_path": "/models/smollm2.gguf", "chat_template": "{{ messages }}",
                                      "build_info": "b8681-Debian"})},
    # https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/commands/trtllm-serve.rst (/version, /health,
    # /metrics); tensorrt_llm/serve/openai_protocol.py (ModelCard owned_by "tensorrt_llm")
    "trtllm-serve": {"server": "uvicorn",
                     "/v1/models": _json({"object": "list", "data": [_card(owned_by="tensorrt_llm")]}),
                     "/version": _json({"version": "1.2.0rc1"})},
    # https://github.com/ollama/ollama/blob/main/docs/api.md#version ; openai/openai.go (owned_by: the namespace)
    "ollama": {"/v1/models": _json({"object": "list", "data": [{"id": "llama3.2:latest", "object": "model",
                                                                 "created": 1767225600, "owned_by": "library"}]}),
               "/api/version": _json({"version": "0.33.0"}),
               "/": (200, {"Content-Type": "text/plain; charset=utf-8"}, b"Ollama is running")},
    # https://github.com/huggingface/text-generation-inference/blob/main/router/src/server.rs (/v1/models owned_by =
    # the model id; /info with router and version)
    "tgi": {"/v1/models": _json({"object": "list", "data": [_card(owned_by=MODEL)]}),
            "/info": _json({"model_id": MODEL, "model_sha": None, "model_pipeline_tag": "text-generation",
                            "max_concurrent_requests": 128, "max_best_of": 2, "max_stop_sequences": 4,
                            "max_input_tokens": 1024, "max_total_tokens": 2048, "validation_workers": 2,
                            "max_client_batch_size": 4, "router": "text-generation-router", "version": "3.3.7",
                            "sha": None, "docker_label": None})},
    # https://github.com/InternLM/lmdeploy lmdeploy/serve/openai/protocol.py (ModelCard owned_by 'lmdeploy'); no
    # version route
    "lmdeploy": {"server": "uvicorn",
                 "/v1/models": _json({"object": "list", "data": [_card(owned_by="lmdeploy", root=MODEL, parent=None,
                                                                      permission=[])]})},
    # https://github.com/openvinotoolkit/model_server/blob/main/docs/model_server_rest_api_kfs.md (GET /v2);
    # src/http_rest_api_handler.cpp (owned_by "OVMS", /v3/models and /v3/v1/models). Its OpenAI API is under /v3
    "ovms": {"/v3/v1/models": _json({"object": "list", "data": [_card(owned_by="OVMS")]}),
             "/v2": _json({"name": "OpenVINO Model Server", "version": "2025.3.0.1e62f3b", "extensions": []})},
}
EXPECTED = {"vllm": "0.11.0", "sglang": "0.5.6", "llama-server": "b8681-Debian", "trtllm-serve": "1.2.0rc1",
            "ollama": "0.33.0", "tgi": "3.3.7", "lmdeploy": None, "ovms": "2025.3.0.1e62f3b"}


class _Stub(http.server.BaseHTTPRequestHandler):
    routes: dict
    seen: list
    stop: threading.Event

    def log_message(self, *a):
        pass

    def version_string(self) -> str:  # the Server header: as the real server sends it, once
        return self.routes.get("server", "")

    def _send(self, status: int, headers: dict, body: bytes) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.seen.append(("GET", self.path, self.headers.get("Authorization")))
        answer = self.routes.get(self.path)
        if answer is None:
            return self._send(404, {"Content-Type": "application/json"}, b'{"detail": "Not Found"}')
        if callable(answer):
            return answer(self)
        self._send(*answer)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.seen.append(("POST", self.path, self.headers.get("Authorization")))
        if not self.path.endswith("/chat/completions"):
            return self._send(404, {}, b"")
        stream_chat(self)


@pytest.fixture
def stub():
    servers, stop = [], threading.Event()

    def start(routes: dict):
        handler = type("H", (_Stub,), {"routes": routes, "seen": [], "stop": stop})
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}", handler.seen

    yield start
    stop.set()
    for s in servers:
        s.shutdown()


def _probe(url: str, **extra) -> ProbeResult:
    s = ProbeSettings(engine="endpoint", endpoint=url, requests=2, concurrency=2, max_tokens=4, prompt_mix="short",
                      warmup=0, timeout_s=60, extra={"stall_timeout_s": 2, **extra})
    return run_probe(s)


def _printable(res: ProbeResult) -> None:
    for text in (res.device, res.serving, *res.notes, res.server_version or ""):
        assert text.isprintable() and "<" not in text, text


# ---------------------------------------------------------------------------------------------- each server
@pytest.mark.parametrize("kind", list(SERVERS))
def test_each_server_is_named_from_its_own_answers(stub, kind):
    url, seen = stub(SERVERS[kind])
    res = _probe(url + ("/v3" if kind == "ovms" else ""))
    assert res.status == "ok" and res.requests_ok == 2, res.reason
    assert (res.server_kind, res.server_version) == (kind, EXPECTED[kind])
    assert res.backend_settings["server_kind"] == kind and res.backend_settings["server_version"] == EXPECTED[kind]
    assert res.device.startswith("remote ") and res.device.endswith(f"server {url.split('//')[1]}"), res.device
    assert (EXPECTED[kind] or "") in res.device and "server" in res.serving
    note = next(n for n in res.notes if n.startswith("server: "))
    assert "GET" in note, note
    if kind == "llama-server":  # told by its Server header before anything else
        assert "the Server header 'llama.cpp' of GET /v1/models" in note, note
    gets = [p for m, p, _ in seen if m == "GET"]
    assert len(gets) <= 3, gets  # the model list and at most two more (Ollama's confirmation, SGLang's old route)
    _printable(res)


def test_vllm_in_the_device_and_serving_text(stub):
    url, seen = stub(SERVERS["vllm"])
    res = _probe(url + "/v1")
    assert res.device == f"remote vLLM 0.11.0 server {url.split('//')[1]}"
    assert res.serving.startswith("2 concurrent HTTP requests to the vLLM 0.11.0 server;")
    assert 'server: vLLM 0.11.0 (owned_by "vllm" in GET /v1/models, version from GET /version)' in res.notes
    assert [p for m, p, _ in seen if m == "GET"] == ["/v1/models", "/version"]  # one extra request


def test_an_older_sglang_answers_get_server_info(stub):
    routes = {k: v for k, v in SERVERS["sglang"].items() if k != "/server_info"}
    routes["/get_server_info"] = SERVERS["sglang"]["/server_info"]
    url, _ = stub(routes)
    res = _probe(url)
    assert (res.server_kind, res.server_version) == ("sglang", "0.5.6")
    assert any("version from GET /get_server_info" in n for n in res.notes)


def test_ollama_under_another_namespace_is_told_by_its_root(stub):
    routes = dict(SERVERS["ollama"])
    routes["/v1/models"] = _json({"object": "list", "data": [{"id": "bartowski/x:latest", "object": "model",
                                                              "created": 1, "owned_by": "bartowski"}]})
    url, _ = stub(routes)
    res = _probe(url)
    assert (res.server_kind, res.server_version) == ("ollama", "0.33.0")


def test_the_key_goes_only_to_the_endpoint_itself(stub):
    url, seen = stub(SERVERS["vllm"])
    s = ProbeSettings(engine="endpoint", endpoint=url, requests=1, max_tokens=4, warmup=0, timeout_s=60,
                      prompt_mix="short").with_credentials(api_key=KEY)
    res = run_probe(s)
    assert res.server_kind == "vllm"
    assert seen and all(auth == f"Bearer {KEY}" for _, _, auth in seen)
    assert KEY not in res.model_dump_json()


# ---------------------------------------------------------------------------------------------- the odd ones
def test_an_unrecognisable_server_gives_none_and_still_measures(stub):
    url, seen = stub({"/v1/models": _json({"object": "list", "data": [{"id": "m", "owned_by": "someone"}]}),
                      "/version": _json({"version": "9.9"})})  # a bare {"version"} names nobody
    res = _probe(url)
    assert res.status == "ok" and res.requests_ok == 2
    assert res.server_kind is None and res.server_version is None
    assert "server_kind" not in res.backend_settings
    assert res.device == f"remote server {url.split('//')[1]}"
    assert any(n.startswith("server: not recognised from its answers (GET /v1/models, GET /info, GET /, GET /v2)")
               for n in res.notes), res.notes
    assert [p for m, p, _ in seen if m == "GET"] == ["/v1/models", "/info", "/", "/v2"]


def _hang(handler):
    handler.stop.wait(30)  # accepts, never answers (the fixture ends it)


def _ten_mb(handler):
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(10 * 2**20))
    handler.end_headers()
    try:
        handler.wfile.write(b'{"version": "' + b"9" * (10 * 2**20 - 14) + b'"}')
    except OSError:  # the client stopped reading at its cap
        pass


def _trickle(handler):
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.end_headers()
    try:
        while not handler.stop.is_set():
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.2)
    except OSError:
        pass


def _redirect_to(where: str):
    def send(handler):
        handler._send(307, {"Location": where}, b"")
    return send


@pytest.mark.parametrize("answer", ["hang", "trickle", "10MB", "redirect"])
def test_a_version_route_that_misbehaves_costs_at_most_the_stall_bound(stub, answer):
    elsewhere, elsewhere_seen = stub(SERVERS["vllm"])
    how = {"hang": _hang, "trickle": _trickle, "10MB": _ten_mb, "redirect": _redirect_to(f"{elsewhere}/version")}
    url, _ = stub({**SERVERS["vllm"], "/version": how[answer]})
    t0 = time.monotonic()
    s = ProbeSettings(engine="endpoint", endpoint=url, requests=2, concurrency=2, max_tokens=4, prompt_mix="short",
                      warmup=0, timeout_s=60, extra={"stall_timeout_s": 1})
    res = run_probe(s.with_credentials(api_key=KEY))
    elapsed = time.monotonic() - t0
    assert res.status == "ok" and res.requests_ok == 2, res.reason
    assert (res.server_kind, res.server_version) == ("vllm", None)
    assert res.load_time_s < 1 + 1.0, res.load_time_s  # the stall bound (1 s) and a margin for the model list
    assert elapsed < 10, elapsed
    assert any("its version did not come" in n for n in res.notes), res.notes
    assert elsewhere_seen == []  # a redirect is not followed: the key went nowhere else


def test_a_version_with_markup_and_control_characters_is_bounded_and_cleaned(stub):
    dirty = "0.6.3<script>alert(1)</script>\x1b[31m\u202e" + "A" * 5000
    url, _ = stub({**SERVERS["vllm"], "/version": _json({"version": dirty})})
    res = _probe(url)
    assert res.server_version == "0.6.3" and res.server_kind == "vllm"
    assert "script" not in res.model_dump_json()
    _printable(res)
    # a stored result is cleaned as it is read, too
    r = ProbeResult(engine="endpoint", status="error", server_kind="made-up", server_version="<b>1.0</b>")
    assert (r.server_kind, r.server_version) == (None, None)
    assert ProbeResult(engine="endpoint", status="error", server_version="v2.1\x07").server_version == "v2.1"


# ---------------------------------------------------------------------------------------------- the verdict
def _remote(kind: str | None, p95: float, version: str | None = "1.0") -> ProbeResult:
    named = {"vllm": "vLLM", "sglang": "SGLang", "llama-server": "llama.cpp", "trtllm-serve": "TensorRT-LLM",
             "ollama": "Ollama"}.get(kind or "")
    return ProbeResult(engine="endpoint", status="ok", server_kind=kind, server_version=version if kind else None,
                       device=f"remote {named + ' ' if named else ''}server 10.0.0.2:8000", goodput=1.0,
                       ttft_ms={"p50": p95 / 2, "p95": p95, "p99": p95}, serving="test")


def test_a_recognised_endpoint_counts_for_its_engine_and_says_how():
    from advisor.decide.rules import recommend
    from advisor.evidence.verdict import SERVER_ENGINE, revisit, stands_for, target_device
    from advisor.inputs.answers import parse_answers
    from advisor.knowledge.load import load_knowledge

    assert SERVER_ENGINE == {"vllm": "vllm", "sglang": "sglang", "llama-server": "llama.cpp",
                             "trtllm-serve": "tensorrt-llm"}
    assert stands_for(_remote("ollama", 100)) == "endpoint" and stands_for(_remote(None, 100)) == "endpoint"
    k = load_knowledge()
    a = parse_answers({"concurrency": 1, "ttft_p95_ms": 1000, "model": {"params_b": 7},
                       "hardware": {"gpu_vendor": "nvidia", "gpu_model": "L40S", "gpu_count": 2,
                                    "gpu_memory_gb": 48, "os": "linux"}})
    rec = recommend(a, None, k, with_flips=False)
    by_engine = {v: key for key, v in SERVER_ENGINE.items()}
    # vLLM leads here (the ranking's own order is not what this tests); another mapped engine follows it
    rec = rec.model_copy(update={"ranking": sorted(rec.ranking, key=lambda r: (r.engine != "vllm",
                                                                               r.engine not in by_engine))})
    top = rec.top.engine
    assert top == "vllm"
    res = _remote(by_engine[top], 200.0, "0.11.0")
    # no target known: it is that engine's measurement, labelled as a remote endpoint run
    v = revisit(rec, [res], 1000.0, "en", labels=["#3 endpoint"], knowledge=k)
    row = next(e for e in v.engines if e.engine == top)
    assert row.measured and row.rank == 1 and row.ttft_p95_ms == 200.0
    assert "through a remote" in row.text and "0.11.0" in row.text and "endpoint run #3 endpoint" in row.text
    assert all(e.engine != "endpoint" for e in v.engines)
    assert v.status == "confirmed"
    # with a target: the remote server's hardware is unknown, so it speaks for that server, not for the target
    t = revisit(rec, [res], 1000.0, "en", target=target_device(a, None, k), knowledge=k)
    assert t.status == "elsewhere" and not t.changes_advice
    assert "hardware the probe does not see" in t.summary and "2 × L40S" in t.summary
    zh = revisit(rec, [res], 1000.0, "zh", target=target_device(a, None, k, "zh"), knowledge=k)
    assert zh.status == "elsewhere" and "远程" in zh.summary
    # a fast remote server of another ranked engine never takes the lead from the plan either
    second = next(r.engine for r in rec.ranking[1:] if r.engine in by_engine)
    slow_top = revisit(rec, [_remote(by_engine[top], 5000.0), _remote(by_engine[second], 100.0)], 1000.0, "en",
                       target=target_device(a, None, k), knowledge=k)
    assert not slow_top.changes_advice and slow_top.status == "elsewhere"
    # a failed run of a recognised server is that engine's failed run, said as such
    bad = ProbeResult(engine="endpoint", status="error", reason="endpoint x: GET /v1/models answered HTTP 503",
                      server_kind="vllm", device="remote vLLM server 10.0.0.2:8000")
    f = revisit(rec, [bad], 1000.0, "en", knowledge=k)
    assert f.status == "failed" and "through a remote vLLM server" in f.summary and "HTTP 503" in f.summary


def test_ollama_and_unrecognised_endpoints_stay_endpoint_runs():
    from advisor.decide.rules import recommend
    from advisor.evidence.verdict import revisit
    from advisor.inputs.answers import parse_answers
    from advisor.knowledge.load import load_knowledge

    k = load_knowledge()
    rec = recommend(parse_answers({"concurrency": 1, "ttft_p95_ms": 1000}), None, k, with_flips=False)
    v = revisit(rec, [_remote("ollama", 100.0, "0.33.0")], 1000.0, "en", knowledge=k)
    row = next(e for e in v.engines if e.engine == "endpoint")
    assert row.measured and row.rank is None
    assert "Ollama" in row.text and "not counted as llama.cpp" in row.text
    assert all(not (e.engine == "llama.cpp" and e.measured) for e in v.engines)
    plain = revisit(rec, [_remote(None, 100.0)], 1000.0, "en", knowledge=k)
    assert [e.engine for e in plain.engines if e.measured] == ["endpoint"]
    assert "through a remote" not in next(e for e in plain.engines if e.engine == "endpoint").text


def test_a_remote_run_never_replaces_a_local_run_of_the_same_engine():
    """A review finding: a later endpoint run of a recognised vLLM server took the place of the vLLM run made here
    (``latest[e] = r``), so the verdict lost its own measurement. The local run stays the engine's row."""
    from advisor.decide.rules import recommend
    from advisor.evidence.verdict import revisit
    from advisor.inputs.answers import parse_answers
    from advisor.knowledge.load import load_knowledge

    k = load_knowledge()
    rec = recommend(parse_answers({"concurrency": 1, "ttft_p95_ms": 1000}), None, k, with_flips=False)
    local = ProbeResult(engine="vllm", status="ok", device="cpu", goodput=1.0, serving="test",
                        ttft_ms={"p50": 100.0, "p95": 300.0, "p99": 300.0})
    v = revisit(rec, [local, _remote("vllm", 4000.0)], 1000.0, "en", labels=["#1 vllm", "#2 endpoint"], knowledge=k)
    row = next(e for e in v.engines if e.engine == "vllm")
    assert row.ttft_p95_ms == 300.0 and "through a remote" not in row.text
