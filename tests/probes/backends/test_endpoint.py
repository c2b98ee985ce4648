"""The endpoint backend against a real local OpenAI-compatible server and against broken ones."""
import http.server
import json
import threading
import time

import pytest

from probes.metrics import percentile
from probes.result import ProbeSettings
from probes.runner import run_probe


def _settings(url, **kw):
    base = dict(engine="endpoint", endpoint=url, requests=8, concurrency=4, max_tokens=12, prompt_mix="short",
                timeout_s=300, warmup=1)
    base.update(kw)
    return ProbeSettings(**base)


def test_real_llama_cpp_server_at_concurrency_4(llama_server):
    res = run_probe(_settings(llama_server))
    assert res.status == "ok", res.reason
    assert res.requests_ok == 8 and res.errors == 0
    assert res.backend_settings["model"] == "smollm2-135m"
    assert "4 concurrent HTTP requests" in res.serving
    # the walk's L16: a local server's own CPU made every such run "busy"; it is the probe's, not other work
    assert any("the server under test runs on this machine" in n for n in res.notes)
    assert all(r.output_tokens >= 1 for r in res.requests)
    ttft = [(r.first_token_s - r.submitted_s) * 1000 for r in res.requests]
    assert res.ttft_ms.p95 == pytest.approx(percentile(ttft, 95), abs=1e-3)
    # 4 requests were in flight at once: their submit times overlap with others' streaming
    firsts = sorted(r.submitted_s for r in res.requests)[:4]
    assert max(firsts) - min(firsts) < min(r.finished_s for r in res.requests) - min(firsts)


class _Handler(http.server.BaseHTTPRequestHandler):
    mode = "500"

    def log_message(self, *a):
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "fake"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.mode.startswith("ok-then-500:"):  # the first N posts (the warm-up included) stream, then 500s
            with self.lock:
                type(self).served += 1
                n = type(self).served
            if n <= int(self.mode.split(":")[1]):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for _ in range(4):
                    chunk = {"choices": [{"delta": {"content": "hi"}}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                return
            self.send_response(500)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"boom!")
        elif self.mode == "500":
            self.send_response(500)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"boom!")
        elif self.mode == "garbage":
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"<html>this is not an event stream</html>\n")
        elif self.mode == "stall":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            chunk = {"choices": [{"delta": {"content": "hi"}}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            time.sleep(4)  # then nothing: the client must give up on its own


@pytest.fixture
def fake_server():
    servers = []

    def start(mode):
        handler = type("H", (_Handler,), {"mode": mode, "served": 0, "lock": threading.Lock()})
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield start
    for s in servers:
        s.shutdown()


def test_server_returning_500s(fake_server):
    res = run_probe(_settings(fake_server("500"), requests=4))
    assert res.status == "error" and res.errors == 4 and "HTTP 500" in res.reason
    assert all("HTTP 500" in r.error for r in res.requests)


def test_server_returning_garbage(fake_server):
    res = run_probe(_settings(fake_server("garbage"), requests=2, warmup=0))
    assert res.status == "error" and "not an event stream" in res.reason


def test_server_that_stalls(fake_server):
    s = _settings(fake_server("stall"), requests=2, concurrency=2, warmup=0)
    s.extra["stall_timeout_s"] = 1
    res = run_probe(s)
    assert res.status == "error" and all("stalled" in r.error for r in res.requests)


def test_unreachable_endpoint():
    res = run_probe(_settings("http://127.0.0.1:9", requests=1))
    assert res.status == "error" and "unreachable" in res.reason


def test_a_run_where_most_requests_fail_is_not_ok(fake_server):
    """The walk's H2: 7 of 8 requests failed and the run was stored as ok, "meets the SLA"."""
    res = run_probe(_settings(fake_server("ok-then-500:3"), requests=8, concurrency=1, warmup=1))
    assert res.requests_ok == 2 and res.errors == 6
    assert res.status == "partial"
    assert res.reason.startswith("not measured: 6 of 8 requests failed") and "HTTP 500" in res.reason
    assert "HTTP 500" in res.top_cause
    assert res.goodput is not None and res.goodput <= 0.25  # failed requests are misses


def test_one_failure_in_twenty_stays_ok_and_is_said(fake_server):
    res = run_probe(_settings(fake_server("ok-then-500:20"), requests=20, concurrency=1, warmup=1))
    assert res.status == "ok" and res.errors == 1 and res.requests_ok == 19
    assert any("1 of 20 requests did not finish ok" in n for n in res.notes)
    assert res.goodput == pytest.approx(0.95)


def test_verdict_of_a_failed_run_says_not_measured_and_why(fake_server):
    from advisor.decide import recommend
    from advisor.evidence import revisit
    from advisor.inputs import Answers
    from advisor.knowledge import load_knowledge

    res = run_probe(_settings(fake_server("ok-then-500:3"), requests=8, concurrency=1))
    k = load_knowledge()
    a = Answers()
    rec = recommend(a, None, k)
    v = revisit(rec, [res.model_copy(update={"engine": rec.top.engine})], 1000.0, "en")
    assert v.status == "failed" and "meets" not in v.summary
    assert "not measured: 6 of 8 requests failed: “HTTP 500" in v.summary
