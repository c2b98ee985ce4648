"""Any OpenAI-compatible HTTP server that is already running (vLLM, trtllm-serve, llama.cpp, …).

Requests are really concurrent (one client thread each); the server does its own batching or not.
Tokens are counted per streamed chunk that carries text; when the server reports usage, the result
says how many tokens the chunks held.
"""
from __future__ import annotations

import http.client
import json
import socket
import time
from typing import Any
from urllib.parse import urlparse

from probes.backends.base import Backend, run_clients
from probes.models import ModelError
from probes.result import ProbeSettings, RequestRecord


class EndpointBackend(Backend):
    id = "endpoint"
    import_name = None
    distributions = ()
    install_hint = "start any OpenAI-compatible server (vllm serve, trtllm-serve, llama-server …) and pass --endpoint URL"
    formats = ()

    @classmethod
    def availability(cls) -> str | None:
        return None  # standard library only

    def _conn(self, timeout: float) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.url.scheme == "https" else http.client.HTTPConnection
        return cls(self.url.hostname, self.url.port or (443 if self.url.scheme == "https" else 80), timeout=timeout)

    def load(self, model, fmt: str, settings: ProbeSettings) -> None:
        self.url = urlparse(settings.endpoint.rstrip("/"))
        self.base = self.url.path[:-3] if self.url.path.endswith("/v1") else self.url.path
        self.stall_s = float(settings.extra.get("stall_timeout_s", 30))
        try:
            c = self._conn(10)
            c.request("GET", f"{self.base}/v1/models")
            r = c.getresponse()
            body = r.read()
        except (OSError, http.client.HTTPException) as err:
            raise ModelError(f"endpoint {settings.endpoint} is unreachable: {err}") from None
        if r.status != 200:
            raise ModelError(f"endpoint {settings.endpoint}: GET /v1/models answered HTTP {r.status}")
        try:
            models = [m["id"] for m in json.loads(body)["data"]]
        except (ValueError, KeyError, TypeError):
            raise ModelError(f"endpoint {settings.endpoint}: /v1/models did not return an OpenAI model list") from None
        self.model_name = settings.extra.get("model_name") or (models[0] if models else None)
        if not self.model_name:
            raise ModelError(f"endpoint {settings.endpoint} serves no model")
        self.device = f"remote server {self.url.netloc}"
        self.backend_settings = {"url": settings.endpoint, "model": self.model_name, "api": "/v1/chat/completions",
                                 "stream": True, "stall_timeout_s": self.stall_s}
        self.serving = (f"{settings.concurrency} concurrent HTTP requests; batching (or queueing) is the "
                        "server's own — a server that serves one request at a time makes TTFT include the wait")
        self.chunk_tokens: list[tuple[int, int]] = []

    def _request(self, index: int, prompt: str, settings: ProbeSettings) -> RequestRecord:
        body = json.dumps({"model": self.model_name, "messages": [{"role": "user", "content": prompt}],
                           "max_tokens": settings.max_tokens, "temperature": 0, "stream": True,
                           "stream_options": {"include_usage": True}, "ignore_eos": True})
        rec = RequestRecord(index=index, submitted_s=time.perf_counter())
        chunks = 0
        try:
            c = self._conn(self.stall_s)
            c.request("POST", f"{self.base}/v1/chat/completions", body=body,
                      headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
            r = c.getresponse()
            if r.status != 200:
                text = r.read(300).decode("utf-8", "replace").strip().replace("\n", " ")
                raise RuntimeError(f"HTTP {r.status}: {text[:200]}")
            usage = None
            for raw in r:
                line = raw.decode("utf-8", "replace").strip()
                if not line or line.startswith(":"):
                    continue
                if not line.startswith("data:"):
                    raise RuntimeError(f"not an event stream: {line[:80]!r}")
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                try:
                    ev = json.loads(data)
                except ValueError:
                    raise RuntimeError(f"invalid JSON in stream: {data[:80]!r}") from None
                if ev.get("usage"):
                    usage = ev["usage"]
                for ch in ev.get("choices") or []:
                    piece = (ch.get("delta") or {}).get("content") or ch.get("text")
                    if piece:
                        now = time.perf_counter()
                        if rec.first_token_s is None:
                            rec.first_token_s = now
                        rec.token_times_s.append(now)
                        chunks += 1
            rec.output_tokens = len(rec.token_times_s)
            if usage:
                rec.prompt_tokens = usage.get("prompt_tokens")
                if usage.get("completion_tokens"):
                    self.chunk_tokens.append((chunks, int(usage["completion_tokens"])))
            if not rec.token_times_s:
                rec.error = "the server streamed no tokens"
        except socket.timeout:
            rec.error = f"stalled: no data for {self.stall_s:g} s"
        except (OSError, http.client.HTTPException, RuntimeError) as err:
            rec.error = f"{type(err).__name__}: {err}" if not isinstance(err, RuntimeError) else str(err)
        rec.finished_s = time.perf_counter()
        return rec

    def run(self, prompts, settings, on_done):
        out = run_clients(prompts, settings.concurrency, lambda i, p: self._request(i, p, settings), on_done)
        mismatched = [(c, u) for c, u in self.chunk_tokens if c != u]
        if mismatched:
            self.notes.append(f"{len(mismatched)} request(s) streamed fewer chunks than the server's token count "
                              f"(e.g. {mismatched[0][0]} chunks for {mismatched[0][1]} tokens): ITL is per chunk")
        return out
