"""A stand-in for SGLang's `python -m sglang.launch_server` (tests only).

It parses the flags of SGLang 0.5.23 that a probe may pass, with their types and choices, as argparse does: an
unknown flag or a bad value exits 2, so a flag the real server lacks fails the test. It serves, with the standard
library, the routes SGLang's http_server.py serves and the shapes it answers (python/sglang/srt/entrypoints/
http_server.py and openai/protocol.py, 0.5.23; https://docs.sglang.io/basic_usage/native_api.html):
GET /health, /health_generate (503 while starting, then 200), /model_info and /get_model_info, /server_info and
/get_server_info, /v1/models (owned_by "sglang", max_model_len); POST /generate (native, SSE of cumulative text with
meta_info), /v1/chat/completions (OpenAI shape, streamed or not, honouring max_tokens, ignore_eos and min_tokens,
with usage), /tokenize and /v1/tokenize ({"tokens", "count", "max_model_len"}).

Like SGLang it starts a worker process (its "scheduler"), which dies with the server (PR_SET_PDEATHSIG, as SGLang's
own subprocesses do). Tokens are words; a chat template adds TEMPLATE_TOKENS.

FAKE_SGLANG_MODE: ok (default) | exit (fails at start with a traceback line, as SGLang without its kernels does) |
hang (never healthy). FAKE_SGLANG_RECORD: a file the server writes its pid, its worker's pid, argv and environment
into. FAKE_SGLANG_TOKEN_S: seconds per output token (default 0.004).
"""
from __future__ import annotations

import argparse
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import uuid

TEMPLATE_TOKENS = 6  # "<|im_start|>user\n … <|im_end|>\n<|im_start|>assistant\n"
VERSION = "0.0.0+stub"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sglang serve")
    p.add_argument("--model-path", "--model", dest="model_path", required=True)
    p.add_argument("--tokenizer-path")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--context-length", type=int)
    p.add_argument("--dtype", choices=["auto", "half", "float16", "bfloat16", "float", "float32"], default="auto")
    p.add_argument("--load-format", default="auto")
    p.add_argument("--served-model-name")
    p.add_argument("--mem-fraction-static", type=float)
    p.add_argument("--max-running-requests", type=int)
    p.add_argument("--max-total-tokens", type=int)
    p.add_argument("--chunked-prefill-size", type=int)
    p.add_argument("--disable-radix-cache", action="store_true")
    p.add_argument("--device")
    p.add_argument("--tp-size", "--tensor-parallel-size", dest="tp_size", type=int, default=1)
    p.add_argument("--random-seed", type=int)
    p.add_argument("--skip-server-warmup", action="store_true")
    p.add_argument("--api-key")
    p.add_argument("--log-level", default="info")
    p.add_argument("--attention-backend")
    p.add_argument("--disable-overlap-schedule", action="store_true")
    p.add_argument("--enable-torch-compile", action="store_true")
    return p


def count(text: str) -> int:
    return len(text.split())


def chat_tokens(messages: list) -> int:
    return TEMPLATE_TOKENS + sum(count(m.get("content") or "") for m in messages if isinstance(m, dict))


class State:
    def __init__(self, args) -> None:
        self.args = args
        self.served = args.served_model_name or args.model_path
        self.ctx = args.context_length or 8192
        self.ready_at = time.monotonic() + 0.3
        self.slots = threading.Semaphore(max(1, args.max_running_requests or 64))
        self.token_s = float(os.environ.get("FAKE_SGLANG_TOKEN_S", "0.004"))
        self.mode = os.environ.get("FAKE_SGLANG_MODE", "ok")
        try:
            with open(os.path.join(args.model_path, "config.json"), encoding="utf-8") as f:
                self.config = json.load(f)
        except (OSError, ValueError):
            self.config = {}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State

    def log_message(self, *a) -> None:
        pass

    def _json(self, obj, status: int = 200) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _empty(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        st, path = self.state, self.path.split("?")[0]
        if path in ("/health", "/health_generate", "/ready"):
            ok = st.mode != "hang" and time.monotonic() >= st.ready_at
            return self._empty(200 if ok else 503)
        if path in ("/model_info", "/get_model_info"):
            return self._json({"model_path": st.args.model_path, "served_model_name": st.served,
                               "tokenizer_path": st.args.tokenizer_path or st.args.model_path, "is_generation": True,
                               "preferred_sampling_params": None, "weight_version": "default",
                               "model_type": st.config.get("model_type"),
                               "architectures": st.config.get("architectures")})
        if path in ("/server_info", "/get_server_info"):
            a = st.args
            seqs = a.max_running_requests or 64
            return self._json({**vars(a), "context_length": st.ctx, "max_running_requests": seqs,
                               "mem_fraction_static": a.mem_fraction_static or 0.88,
                               "max_total_num_tokens": a.max_total_tokens or st.ctx * seqs,
                               "attention_backend": a.attention_backend or "intel_amx",
                               "launch_command": " ".join(sys.argv), "internal_states": [{}],
                               "version": VERSION, "frontend": "python"})
        if path == "/v1/models":
            return self._json({"object": "list", "data": [
                {"id": st.served, "object": "model", "created": int(time.time()), "owned_by": "sglang",
                 "root": st.served, "parent": None, "max_model_len": st.ctx}]})
        self._json({"detail": "Not Found"}, 404)

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        try:
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        except ValueError:
            return self._json({"object": "error", "message": "invalid JSON", "code": 400}, 400)
        if path in ("/tokenize", "/v1/tokenize"):
            return self._tokenize(req)
        if path == "/generate":
            return self._generate(req)
        if path == "/v1/chat/completions":
            return self._chat(req)
        self._json({"detail": "Not Found"}, 404)

    def _tokenize(self, req: dict) -> None:
        if (req.get("prompt") is None) == (req.get("messages") is None):
            return self._json({"object": "error", "message": "Exactly one of 'prompt' or 'messages' must be "
                                                            "provided.", "code": 400}, 400)
        n = chat_tokens(req["messages"]) if req.get("messages") is not None else count(str(req["prompt"]))
        self._json({"tokens": list(range(n)), "count": n, "max_model_len": self.state.ctx})

    def _outputs(self, want: int, ignore_eos: bool, min_tokens: int) -> int:
        """The tokens a request gets: all it asks for when EOS is ignored or a minimum holds it, else the fake
        model's EOS after 3."""
        return want if ignore_eos or min_tokens >= want else min(want, max(3, min_tokens))

    def _sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _send(self, data: str) -> None:
        chunk = f"data: {data}\n\n".encode()
        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        self.wfile.flush()

    def _end(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _generate(self, req: dict) -> None:
        sp = req.get("sampling_params") or {}
        text = req.get("text")
        if not isinstance(text, str):
            return self._json({"error": {"message": "text must be a string"}}, 400)
        want = int(sp.get("max_new_tokens", 128))
        n = self._outputs(want, bool(sp.get("ignore_eos")), int(sp.get("min_new_tokens", 0)))
        rid, prompt = uuid.uuid4().hex, count(text)

        def meta(done: int, finished: bool) -> dict:
            reason = ({"type": "length", "length": want} if done >= want else {"type": "stop", "matched": 2}) \
                if finished else None
            return {"id": rid, "finish_reason": reason, "prompt_tokens": prompt, "completion_tokens": done,
                    "cached_tokens": 0, "weight_version": "default"}

        with self.state.slots:
            if not req.get("stream"):
                time.sleep(self.state.token_s * n)
                return self._json({"text": " ".join(f"w{i}" for i in range(n)), "meta_info": meta(n, True)})
            self._sse()
            out = []
            for i in range(n):
                time.sleep(self.state.token_s)
                out.append(f"w{i}")
                self._send(json.dumps({"text": " ".join(out), "meta_info": meta(i + 1, i + 1 == n), "index": 0}))
            self._send("[DONE]")
            self._end()

    def _chat(self, req: dict) -> None:
        msgs = req.get("messages")
        if not isinstance(msgs, list) or not msgs:
            return self._json({"object": "error", "message": "messages is required", "code": 400}, 400)
        want = int(req.get("max_tokens") or req.get("max_completion_tokens") or 128)
        n = self._outputs(want, bool(req.get("ignore_eos")), int(req.get("min_tokens") or 0))
        prompt = chat_tokens(msgs)
        if prompt + want > self.state.ctx:
            return self._json({"object": "error", "message": f"Requested token count exceeds the model's maximum "
                                                            f"context length of {self.state.ctx} tokens.",
                               "code": 400}, 400)
        rid, model = f"chatcmpl-{uuid.uuid4().hex}", self.state.served
        usage = {"prompt_tokens": prompt, "completion_tokens": n, "total_tokens": prompt + n}
        finish = "length" if n >= want else "stop"
        with self.state.slots:
            if not req.get("stream"):
                time.sleep(self.state.token_s * n)
                return self._json({"id": rid, "object": "chat.completion", "created": int(time.time()),
                                   "model": model, "choices": [{"index": 0, "message": {
                                       "role": "assistant", "content": " ".join(f"w{i}" for i in range(n))},
                                       "finish_reason": finish}], "usage": usage})
            self._sse()

            def chunk(delta: dict, reason=None) -> str:
                return json.dumps({"id": rid, "object": "chat.completion.chunk", "created": int(time.time()),
                                   "model": model, "choices": [{"index": 0, "delta": delta,
                                                                "finish_reason": reason}]})

            self._send(chunk({"role": "assistant", "content": ""}))
            for i in range(n):
                time.sleep(self.state.token_s)
                self._send(chunk({"content": f"w{i} "}))
            self._send(chunk({}, finish))
            if (req.get("stream_options") or {}).get("include_usage"):
                self._send(json.dumps({"id": rid, "object": "chat.completion.chunk", "created": int(time.time()),
                                       "model": model, "choices": [], "usage": usage}))
            self._send("[DONE]")
            self._end()


_WORKER = """
import ctypes, signal, time
ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG, as SGLang's subprocesses
time.sleep(3600)
"""


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    mode = os.environ.get("FAKE_SGLANG_MODE", "ok")
    print(f"[fake sglang {VERSION}] server_args: model_path={args.model_path} device={args.device}", flush=True)
    if mode == "exit":
        print("Traceback (most recent call last):", file=sys.stderr)
        print("ModuleNotFoundError: No module named 'sgl_kernel' (fake SGLang failed to start)", file=sys.stderr,
              flush=True)
        return 1
    worker = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.DEVNULL)
    record = os.environ.get("FAKE_SGLANG_RECORD")
    if record:
        keys = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "SGLANG_USE_CPU_ENGINE", "PROBE_EVENT_FD")
        with open(record, "w", encoding="utf-8") as f:
            json.dump({"pid": os.getpid(), "worker_pid": worker.pid, "argv": sys.argv[1:],
                       "env": {k: os.environ.get(k) for k in keys}}, f)
    handler = type("H", (Handler,), {"state": State(args)})
    srv = http.server.ThreadingHTTPServer((args.host, args.port), handler)
    srv.daemon_threads = True
    srv.serve_forever()  # SIGTERM ends the process (the worker dies with it)
    return 0


if __name__ == "__main__":
    sys.exit(main())
