"""The endpoint's tokenizer calls share the run's deadline (issue 19, medium).

A server whose /tokenize trickles its answer a byte at a time never trips the per-read stall timeout; before, fitting
the prompts waited on it until the parent's hard kill. Now the call is cut at the run's deadline and the probe ends
with one line naming /tokenize, before the kill.
"""
from __future__ import annotations

import http.server
import json
import threading
import time

import pytest

from tests.hostile.kit import bounded, send_json


class _Trickle(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        send_json(self, 200, {"object": "list", "data": [{"id": "fake", "max_model_len": 4096}]})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        try:
            for _ in range(600):  # a byte every 0.2 s: never a stall, never an answer
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass


@pytest.fixture
def trickle():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_a_trickling_tokenizer_is_cut_at_the_runs_deadline(trickle):
    out = bounded(["-m", "probes", "run", "--engine", "endpoint", "--endpoint", trickle, "--input-tokens", "64",
                   "--output-tokens", "4", "--requests", "2", "--warmup", "0", "--timeout", "12", "--format", "json"],
                  hard_limit_s=60)
    res = json.loads(out.out)
    assert res["status"] == "error"
    assert "/tokenize did not answer before the run's deadline" in res["reason"], res["reason"]
    assert "was killed" not in res["reason"]
    assert out.seconds < 12, out.seconds  # the run's deadline (about 0.9 × timeout − 5 s), not the hard kill
