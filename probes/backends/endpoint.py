"""Any OpenAI-compatible HTTP server that is already running (vLLM, trtllm-serve, llama.cpp, …).

Requests are really concurrent (one client thread each); the server does its own batching or not.
Tokens are counted per streamed chunk that carries text; when the server reports usage, the result
says how many tokens the chunks held.

The server is not trusted: every request ends as ok, incomplete or error with a one-line cause,
whatever the server sends (see `RequestRecord.status`), and the client bounds what it keeps and how
long it waits:
- memory: one stream line ≤ MAX_LINE_BYTES, one streamed body ≤ MAX_STREAM_BYTES, the model list
  ≤ MAX_MODELS_BYTES, an error body excerpt ≤ MAX_ERROR_BYTES;
- time: no bytes for `stall_timeout_s` (extra, default 30 s) is an error; a request is cut at its own
  deadline (`request_timeout_s`, extra, default 120 s) and every request at the run's deadline, which
  comes before the parent's hard kill at `timeout_s`, so what was measured still comes back;
- tokens: the client stops a stream itself once it has `max_tokens` chunks and the server sends more.

The output length is asked for with `max_tokens`, `ignore_eos` and `min_tokens` (vLLM and llama-cpp-python's
server honour the last two; servers that do not may stop early). With a workload in tokens (`output_tokens`,
`input_tokens`, a preset or a prompts file) a request whose stream finishes before its output length is
`incomplete`; with the legacy `max_tokens` alone a finished stream is ok whatever its length.

Prompts fitted to `input_tokens` are counted in the server's own tokenizer where the server has one to ask
(see `_find_tokenizer`); otherwise they are approximated from two calibration requests and the notes say so.

The server is named where its own answers say which it is (`_identify`: vLLM, SGLang, llama-server, trtllm-serve,
Ollama, TGI, LMDeploy, OVMS): `server_kind` and `server_version` of the result, None when not recognised.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from typing import TYPE_CHECKING, Iterable, Iterator
from urllib.parse import urlparse

from probes.backends.base import Backend, prompts_of, run_clients
from probes.redact import redact_text
from probes.models import ModelError
from probes.result import ProbeSettings, RequestRecord, clean_version
from probes.workload import Prompt, uses_tokens

if TYPE_CHECKING:
    import httpx

MiB = 2**20
MAX_LINE_BYTES = 1 * MiB
MAX_STREAM_BYTES = 64 * MiB
MAX_MODELS_BYTES = 1 * MiB
MAX_ERROR_BYTES = 300
EXCERPT_CHARS = 80
DEFAULT_STALL_S = 30.0
DEFAULT_REQUEST_TIMEOUT_S = 120.0
MAX_TOKENIZE_BYTES = 16 * MiB  # a /tokenize answer: a token list of a long prompt
MAX_IDENTIFY_BYTES = 256 * 1024  # one answer read to name the server (SGLang's /server_info lists its arguments)
IDENTIFY_BUDGET_S = 5.0  # every request that names the server, together (never more than the stall timeout)
_SECRETS: list[str] = []  # this run's key and URL secrets (one run per child process): never in an excerpt


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB and n % MiB == 0 else f"{n:,} bytes"


def _encoding(r: httpx.Response) -> str | None:
    """The Content-Encoding a server applied although every request asks for identity, or None. httpx would inflate
    it before any cap of ours could look (10 KB of `gzip, gzip` inflate to gigabytes in one chunk), so such a body is
    never decoded: the raw bytes are read, or none."""
    enc = ",".join(r.headers.get_list("content-encoding")).strip().lower()
    return None if enc in ("", "identity") else " ".join(enc.split())  # cut by excerpt(), after its redaction


def _raw(r: httpx.Response, what: str):
    """The body's bytes as they came (never inflated); a compressed body is refused before a byte of it is read."""
    enc = _encoding(r)
    if enc is not None:
        raise ModelError(f"{what}: the server compressed its answer ({excerpt(enc)}) although asked for identity; "
                         f"not inflated")
    return r.iter_raw()


def _read_capped(r: httpx.Response, cap: int, what: str) -> bytes:
    """A JSON answer's body, read as it streams and refused past `cap` bytes (the server is not trusted)."""
    body = bytearray()
    for chunk in _raw(r, what):
        body += chunk
        if len(body) > cap:
            raise ModelError(f"{what} answered more than {_size(cap)}")
    return bytes(body)


def excerpt(text: str | bytes, limit: int = EXCERPT_CHARS) -> str:
    """A short, printable excerpt of server text: repr-escaped, so control characters never reach output."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = redact_text(" ".join(text.split()), _SECRETS)  # before the cut: no piece of a secret survives it
    return repr(text[:limit]) + ("…" if len(text) > limit else "")


class _DeadlineHit(Exception):
    """The reading loop saw the request's deadline pass."""


class _Fail(Exception):
    """Ends one request as an error; str() is the cause."""


class _Ended(Exception):
    """The stream ended too early: the peer closed it (`closed`), or the client cut it at a deadline."""

    def __init__(self, what: str, closed: bool = False) -> None:
        super().__init__(what)
        self.closed = closed


def bounded_lines(chunks: Iterable[bytes], max_line: int = MAX_LINE_BYTES,
                  max_total: int = MAX_STREAM_BYTES) -> Iterator[bytes]:
    """The non-empty lines of a byte stream (split at \\n, \\r\\n or \\r), each without its terminator.

    httpx's own `iter_lines()` keeps an unterminated line in memory without any bound: a server that
    sends one endless line grows the client until the machine runs out of memory. This splitter raises
    `_Fail` once one line exceeds `max_line` bytes or the whole body exceeds `max_total` bytes, and does
    linear work however the bytes are chunked.
    """
    pending = bytearray()
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > max_total:
            raise _Fail(f"the stream exceeded {_size(max_total)}")
        parts = chunk.replace(b"\r", b"\n").split(b"\n")
        if len(parts) == 1:
            pending += chunk
        else:
            pending += parts[0]
            head = bytes(pending)
            pending = bytearray(parts[-1])
            for line in (head, *parts[1:-1]):
                if len(line) > max_line:
                    raise _Fail(f"a stream line exceeded {_size(max_line)}")
                if line:
                    yield line
        if len(pending) > max_line:
            raise _Fail(f"a stream line exceeded {_size(max_line)}")
    if pending:
        yield bytes(pending)


class _Flight:
    """One in-flight response the cutter may end at `deadline` (time.monotonic())."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.response: httpx.Response | None = None
        self.stream = None  # the connection's network stream, from httpcore's trace, before any header arrives
        self.cut = False
        self.done = False

    def trace(self, name: str, info: dict) -> None:
        """httpcore's trace hook: keep the connection's stream as soon as it is made, so the cutter can end a
        server that drips its headers (a byte a second never trips a per-read timeout) at the same deadline."""
        if name in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            self.stream = info.get("return_value")

    @property
    def extensions(self) -> dict:
        return {"trace": self.trace}


class _Cutter:
    """Ends in-flight responses at their deadline, from one watching thread.

    httpx's read timeout is per read: a server that trickles a byte now and then, or pauses for less
    than the stall timeout each time, would outlive any deadline. Shutting the socket down wakes the
    reading thread at once; that connection is then closed, never reused.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: set[_Flight] = set()
        self._stop = threading.Event()
        threading.Thread(target=self._watch, name="endpoint-deadlines", daemon=True).start()

    def add(self, flight: _Flight) -> None:
        with self._lock:
            self._flights.add(flight)

    def attach(self, flight: _Flight, response: httpx.Response) -> None:
        with self._lock:
            flight.response = response
        if time.monotonic() >= flight.deadline:
            self._cut_now(flight)

    def remove(self, flight: _Flight) -> None:
        with self._lock:  # after this the watcher never touches the connection (it may go back to the pool)
            flight.done = True
            self._flights.discard(flight)

    def stop(self) -> None:
        self._stop.set()

    def _cut_now(self, flight: _Flight) -> None:
        with self._lock:
            if flight.done or flight.cut or (flight.response is None and flight.stream is None):
                return
            flight.cut = True
            stream = flight.response.extensions.get("network_stream") if flight.response is not None \
                else flight.stream
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                try:  # the plain socket's shutdown, also under TLS: it only wakes the reader
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
                except OSError:
                    pass

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            now = time.monotonic()
            with self._lock:
                due = [f for f in self._flights if not f.cut and (f.response is not None or f.stream is not None)
                       and now >= f.deadline]
            for f in due:
                self._cut_now(f)


def _int_or_none(usage: dict, key: str) -> int | None:
    v = usage.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise _Fail(f"malformed event: usage.{key} is not a count: {excerpt(json.dumps(v))}")
    return v


def parse_event(data: str) -> tuple[list[str], bool, dict | None]:
    """One `data:` payload → (text pieces, whether a choice finished, usage or None). Raises _Fail if malformed."""
    try:
        ev = json.loads(data)
    except (ValueError, RecursionError):
        raise _Fail(f"malformed event: invalid JSON: {excerpt(data)}") from None
    if not isinstance(ev, dict):
        raise _Fail(f"malformed event: not a JSON object: {excerpt(data)}")
    if ev.get("error") is not None:
        raise _Fail(f"the server reported an error in the stream: {excerpt(json.dumps(ev['error']))}")
    choices = ev.get("choices")
    if choices is None:
        choices = []
    if not isinstance(choices, list):
        raise _Fail(f"malformed event: 'choices' is not a list: {excerpt(json.dumps(choices))}")
    pieces: list[str] = []
    finished = False
    for ch in choices:
        if not isinstance(ch, dict):
            raise _Fail(f"malformed event: a choice is not an object: {excerpt(json.dumps(ch))}")
        delta = ch.get("delta")
        if delta is not None and not isinstance(delta, dict):
            raise _Fail(f"malformed event: 'delta' is not an object: {excerpt(json.dumps(delta))}")
        piece = (delta or {}).get("content")
        if piece is None:
            piece = ch.get("text")
        if piece is not None and not isinstance(piece, str):
            raise _Fail(f"malformed event: the content is not text: {excerpt(json.dumps(piece))}")
        if piece:
            pieces.append(piece)
        if ch.get("finish_reason") is not None:
            finished = True
    usage = ev.get("usage")
    if usage is not None:
        if not isinstance(usage, dict):
            raise _Fail(f"malformed event: 'usage' is not an object: {excerpt(json.dumps(usage))}")
        usage = {k: _int_or_none(usage, k) for k in ("prompt_tokens", "completion_tokens")}
    return pieces, finished, usage


def _http_error(err: Exception) -> str:
    import httpx

    if isinstance(err, httpx.ConnectTimeout):
        return "connect timed out"
    if isinstance(err, httpx.ConnectError):
        if "WRONG_VERSION_NUMBER" in str(err):  # TLS spoken to a server that answers plain HTTP
            return "the server answers plain HTTP, not HTTPS: use an http:// URL"
        return f"connection failed: {excerpt(str(err) or type(err).__name__)}"
    return f"{type(err).__name__}: {excerpt(str(err))}"


# What identifies each server (EndpointBackend._identify), from its own source or docs, read 2026-12-01:
# - vLLM: ModelCard `owned_by: str = "vllm"` (vllm/entrypoints/openai/engine/protocol.py, also `root`,
#   `max_model_len`); GET /version → {"version": VLLM_VERSION} (vllm/frontend/entrypoints/serve/instrumentator/
#   basic.py) — https://github.com/vllm-project/vllm
# - SGLang: ModelCard `owned_by: str = "sglang"` (python/sglang/srt/entrypoints/openai/protocol.py, also `root`,
#   `max_model_len`); GET /server_info (GET /get_server_info before it, now deprecated) → {…its server args,
#   "version": __version__} (python/sglang/srt/entrypoints/http_server.py) —
#   https://docs.sglang.io/basic_usage/native_api.html
# - llama-server: every answer carries `Server: llama.cpp` (tools/server, set_default_headers) and /v1/models entries
#   say `"owned_by": "llamacpp"`; GET /props → {"build_info": "b8681-…", "total_slots", "default_generation_settings",
#   …} — https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md
# - trtllm-serve: ModelCard `owned_by: str = "tensorrt_llm"` (tensorrt_llm/serve/openai_protocol.py); GET /version →
#   {"version": VERSION} (tensorrt_llm/serve/openai_server.py), beside /health and /metrics —
#   https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/commands/trtllm-serve.rst
# - Ollama: /v1/models `owned_by` is the model name's namespace, "library" unless the name has one (openai/openai.go,
#   types/model/name.go): a hint only, made sure by GET /api/version → {"version"} or GET / → "Ollama is running"
#   (server/routes.go) — https://github.com/ollama/ollama/blob/main/docs/api.md#version
# - TGI: /v1/models `owned_by` is the model id itself (a hint only); GET /info → {"model_id", …, "router":
#   "text-generation-router", "version", "sha"} (router/src/server.rs, router/src/lib.rs, v3.3.7) —
#   https://github.com/huggingface/text-generation-inference/blob/main/router/src/server.rs
# - LMDeploy: ModelCard `owned_by: str = 'lmdeploy'` (lmdeploy/serve/openai/protocol.py); its api_server has no version
#   route (lmdeploy/serve/openai/endpoints/, v0.16.0), so the version stays unknown —
#   https://github.com/InternLM/lmdeploy
# - OVMS: /v1/models and /v3/models entries say `"owned_by": "OVMS"` (src/http_rest_api_handler.cpp); GET /v2 (KServe
#   server metadata) → {"name": "OpenVINO Model Server", "version", "extensions"} —
#   https://github.com/openvinotoolkit/model_server/blob/main/docs/model_server_rest_api_kfs.md
# Headers: vLLM, SGLang, trtllm-serve and LMDeploy serve through uvicorn (`server: uvicorn` names none of them); TGI,
# Ollama and OVMS document no identifying header, and the x-compute-* headers of TGI come only with a generation.
#: how each recognised server is named in the device, serving and notes texts ("remote llama.cpp b8681 server …"; the
#: kind itself says which of a project's servers it is)
from probes.result import SERVER_NAMES  # noqa: E402 (the names live with the result type the advisor reads)
#: the `owned_by` a server writes into its own model list, verified in its source (EndpointBackend._identify)
_OWNED_BY = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llama-server", "tensorrt_llm": "trtllm-serve",
             "lmdeploy": "lmdeploy", "OVMS": "ovms"}
#: where a recognised server says its version: (path, key), tried in order; LMDeploy has no such route
_VERSION_AT = {"vllm": [("/version", "version")], "trtllm-serve": [("/version", "version")],
               "sglang": [("/server_info", "version"), ("/get_server_info", "version")],
               "llama-server": [("/props", "build_info")], "ovms": [("/v2", "version")],
               "ollama": [("/api/version", "version")], "tgi": [("/info", "version")]}
#: a server that names itself nowhere in /v1/models: the routes that identify one surely, cheapest first
_UNNAMED = ("/info", "/", "/v2")


def _is_tgi(ans: object) -> bool:
    return isinstance(ans, dict) and ans.get("router") == "text-generation-router" and "model_id" in ans


def _recognise_unnamed(path: str, ans: object, raw: bytes | None) -> tuple[str, object] | None:
    """(kind, version) when the answer at `path` is one that only that server gives; else None."""
    if path == "/info" and _is_tgi(ans):
        return "tgi", ans.get("version")
    if path == "/" and raw is not None and raw.strip() == b"Ollama is running":
        return "ollama", None
    if path == "/v2" and isinstance(ans, dict) and ans.get("name") == "OpenVINO Model Server":
        return "ovms", ans.get("version")
    return None


class EndpointBackend(Backend):
    id = "endpoint"
    import_name = None
    distributions = ()
    requires = (("httpx", "httpx"),)
    install_hint = "start any OpenAI-compatible server (vllm serve, trtllm-serve, llama-server …) and pass --endpoint URL"
    formats = ()

    def _client(self, connections: int) -> httpx.Client:
        import httpx

        return httpx.Client(
            headers=self.auth_headers,
            # the endpoint's own query (a proxy's ?api_key=...) goes with every request, as the README says; only
            # what we show or keep is masked
            params=getattr(self, "query", None) or None,
            timeout=httpx.Timeout(connect=10, read=self.stall_s, write=10, pool=10),
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
            follow_redirects=False,  # reported, not followed: the probe measures the URL it was given
            # no proxy (nor netrc or CA bundle) from the environment: the probe talks to the server itself, and an
            # HTTP(S)_PROXY meant for the internet must not sit between it and a local server
            trust_env=False,
        )

    def _deadline(self) -> tuple[float, str]:
        """The earlier of this request's own deadline and the run's, and which one it is."""
        own = time.monotonic() + self.request_s
        return (own, "request") if own < self.run_deadline else (self.run_deadline, "run")

    def load(self, model, fmt: str, settings: ProbeSettings) -> None:
        import httpx

        # the run's deadline: stop before the parent's hard kill at timeout_s (counted from about now), so the
        # records measured so far come back with the result instead of being discarded with a killed process
        self.run_budget_s = max(3.0, 0.9 * settings.timeout_s - 5.0)
        self.run_deadline = time.monotonic() + self.run_budget_s
        # requests go to the real URL (its userinfo becomes HTTP Basic auth in httpx) with the key as a bearer
        # token; everything said or kept names `settings.endpoint`, the redacted URL (probes/redact.py)
        self.url = urlparse(settings.endpoint_url.rstrip("/"))
        from urllib.parse import parse_qsl

        self.query = parse_qsl(self.url.query, keep_blank_values=True)[:32]
        _SECRETS[:] = settings.secrets()
        self.auth_headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        auth = ("bearer key (not stored)" if settings.api_key else
                "from the URL's userinfo or parameters (not stored)" if settings.endpoint_url != settings.endpoint
                else None)
        path = self.url.path.rstrip("/")
        self.base = path[:-3] if path.endswith("/v1") else path
        self.stall_s = float(settings.extra.get("stall_timeout_s", DEFAULT_STALL_S))
        self.request_s = float(settings.extra.get("request_timeout_s", DEFAULT_REQUEST_TIMEOUT_S))
        # an explicit key wins over the URL's userinfo (httpx would send that as Basic auth instead of the bearer)
        netloc = self.url.netloc.rsplit("@", 1)[-1] if settings.api_key else self.url.netloc
        self.origin = f"{self.url.scheme}://{netloc}"
        self.cutter = _Cutter()
        self._note_lock = threading.Lock()
        self._noted: set[str] = set()
        where = f"endpoint {settings.endpoint}"
        flight = _Flight(self._deadline()[0])
        budget = min(self.request_s, self.run_budget_s)
        self.cutter.add(flight)
        try:
            with self._client(1) as client, client.stream(
                    "GET", f"{self.origin}{self.base}/v1/models",
                    headers={"Accept": "application/json", "Accept-Encoding": "identity"},
                    extensions=flight.extensions) as r:
                self.cutter.attach(flight, r)
                if r.status_code != 200:
                    where_to = r.headers.get("location")
                    extra = f" (a redirect to {excerpt(where_to)}, not followed)" if where_to else ""
                    raise ModelError(f"{where}: GET /v1/models answered HTTP {r.status_code}{extra}")
                body = _read_capped(r, MAX_MODELS_BYTES, f"{where}: /v1/models")
                if flight.cut:
                    raise ModelError(f"{where}: /v1/models did not finish within {budget:g} s")
                server_header = r.headers.get("server")
        except httpx.ReadTimeout:
            raise ModelError(f"{where}: /v1/models stalled (no data for {self.stall_s:g} s)") from None
        except (httpx.HTTPError, OSError) as err:
            if flight.cut:
                raise ModelError(f"{where}: /v1/models did not finish within {budget:g} s") from None
            raise ModelError(f"{where} is unreachable: {_http_error(err)}") from None
        finally:
            self.cutter.remove(flight)
        try:
            data = json.loads(body)["data"]
            models = [m["id"] for m in data]
            if not all(isinstance(m, str) for m in models):
                raise TypeError
        except (ValueError, KeyError, TypeError, RecursionError):
            raise ModelError(f"{where}: /v1/models did not return an OpenAI model list") from None
        self.model_name = settings.extra.get("model_name") or (models[0] if models else None)
        if not self.model_name:
            raise ModelError(f"{where} serves no model")
        entry = next((m for m in data if isinstance(m, dict) and m.get("id") == self.model_name), {})
        ctx = entry.get("max_model_len") if isinstance(entry, dict) else None  # vLLM says it; others do not
        self.context_tokens = ctx if isinstance(ctx, int) and not isinstance(ctx, bool) and ctx > 0 else None
        self.exact = uses_tokens(settings)  # a workload in tokens: a stream that stops early is incomplete
        self.tokenizer: dict | None = None  # found on the first count (only a fitted workload needs one)
        self.output_rule = ("the request asks for max_tokens, ignore_eos=true and min_tokens=the output length; "
                            "a request that ends before it is incomplete")
        self.server_kind: str | None = None
        self.server_version: str | None = None
        if settings.extra.get("identify_server", True):
            self._identify(data, server_header, entry)
        named = self._server_name()
        self.device = f"remote {named + ' ' if named else ''}server {self.url.netloc.rsplit('@', 1)[-1]}"
        self.backend_settings = {"url": settings.endpoint, "model": self.model_name, "api": "/v1/chat/completions",
                                 "stream": True, "stall_timeout_s": self.stall_s, "request_timeout_s": self.request_s}
        if self.server_kind:
            self.backend_settings.update(server_kind=self.server_kind, server_version=self.server_version)
        if auth:
            self.backend_settings["auth"] = auth
        self.serving_mode = "endpoint"
        to = f" to the {named} server" if named else ""
        self.serving = (f"{settings.concurrency} concurrent HTTP requests{to}; batching (or queueing) is the "
                        "server's own — a server that serves one request at a time makes TTFT include the wait")
        self.chunk_tokens: list[tuple[int, int]] = []

    def close(self) -> None:
        cutter = getattr(self, "cutter", None)
        if cutter is not None:
            cutter.stop()
        aux = getattr(self, "_aux", None)
        if aux is not None:
            aux.close()
            self._aux = None

    def _note(self, key: str, text: str) -> None:
        with self._note_lock:
            if key not in self._noted:
                self._noted.add(key)
                self.notes.append(text)

    # ------------------------------------------------------------------ which server this is
    def _server_name(self) -> str | None:
        """The server's name and version ("vLLM 0.11.0") for the device and serving texts; None if not recognised."""
        if not self.server_kind:
            return None
        return SERVER_NAMES[self.server_kind] + (f" {self.server_version}" if self.server_version else "")

    def _identify(self, data: list, server_header: str | None, entry: dict) -> None:
        """Name the server from what it answers, cheaply: the /v1/models answer already read first (its Server header,
        its entries' `owned_by`), then at most one or two small GETs for the version; only a server that names
        itself nowhere there costs the three checks of `_UNNAMED`. Every GET is capped (MAX_IDENTIFY_BYTES), goes to
        the endpoint's own origin (its key with it, nowhere else), is never redirected, and all of them end within
        IDENTIFY_BUDGET_S (or the stall timeout, or the run's deadline, whichever is first). A failing or odd answer
        only leaves the kind or the version unknown; the notes say what was recognised from what.
        What identifies each server, with its source: the comment above SERVER_NAMES."""
        end = min(self.run_deadline, time.monotonic() + min(IDENTIFY_BUDGET_S, self.stall_s))
        entries = [m for m in data if isinstance(m, dict)]
        owners = [m.get("owned_by") for m in [entry, *entries] if isinstance(m.get("owned_by"), str)]
        kind, version, how, asked = None, None, [], []
        header = (server_header or "").strip()
        with self._client(1) as client:
            def get(path: str, root: bool = False) -> tuple[object, bytes | None]:
                asked.append(path)
                return self._peek(client, path, end, root)

            # what the model list already said: sure, at no cost
            if any(part.strip().lower().startswith("llama.cpp") for part in header.split(",")):
                kind, how = "llama-server", [f"the Server header {excerpt(header, 20)} of GET /v1/models"]
            elif any(o in _OWNED_BY for o in owners):
                own = next(o for o in owners if o in _OWNED_BY)
                kind, how = _OWNED_BY[own], [f'owned_by "{own}" in GET /v1/models']
            # hints that the server's own route makes sure
            if kind is None and "library" in owners:  # Ollama's default namespace
                ans, _ = get("/api/version")
                if isinstance(ans, dict) and clean_version(ans.get("version")):
                    kind, version, how = "ollama", ans["version"], ['owned_by "library" in GET /v1/models',
                                                                    "GET /api/version"]
            if kind is None and entry.get("owned_by") and entry.get("owned_by") == entry.get("id"):  # TGI's
                ans, _ = get("/info")
                if _is_tgi(ans):
                    kind, version, how = "tgi", ans.get("version"), ['GET /info (router "text-generation-router")']
            # named nowhere: the routes that only one server answers so
            for path in _UNNAMED:
                if kind is not None or time.monotonic() >= end:
                    break
                if path not in asked:
                    ans, raw = get(path, root=path == "/v2")
                    found = _recognise_unnamed(path, ans, raw)
                    if found:
                        (kind, version), how = found, [f"GET {path}"]
            # the version, where the server says it
            for path, key in _VERSION_AT.get(kind, ()) if version is None else ():
                if path in asked or time.monotonic() >= end:
                    continue
                ans, _ = get(path, root=kind == "ovms")
                if isinstance(ans, dict) and isinstance(ans.get(key), str) and clean_version(ans[key]):
                    version = ans[key]
                    how.append(f"version from GET {path}")
                    break
        self.server_kind = kind
        self.server_version = clean_version(redact_text(version, _SECRETS)) if isinstance(version, str) else None
        if kind:
            missing = ("" if self.server_version else
                       "; it says no version" if kind not in _VERSION_AT else "; its version did not come")
            self.notes.append(f"server: {self._server_name()} ({', '.join(how)}{missing})")
        else:
            looked = ", ".join(f"GET {p}" for p in ["/v1/models", *asked])
            self.notes.append(f"server: not recognised from its answers ({looked}); the run measures an unnamed "
                              "OpenAI-compatible server")

    def _peek(self, client: httpx.Client, path: str, end: float, root: bool = False) -> tuple[object, bytes | None]:
        """GET one small answer → (its JSON or None, its bytes or None); (None, None) for anything but a 200 within
        `end` and MAX_IDENTIFY_BYTES. Never raises: naming the server is not worth failing a run for. `root`: at the
        origin's root when the endpoint is OVMS's /v3 (KServe's /v2 is beside it)."""
        import httpx

        left = end - time.monotonic()
        if left <= 0.05:
            return None, None
        base = self.base[:-3] if root and self.base.endswith("/v3") else self.base
        flight = _Flight(end)
        self.cutter.add(flight)
        try:
            with client.stream("GET", f"{self.origin}{base}{path}",
                               headers={"Accept": "application/json", "Accept-Encoding": "identity"},
                               timeout=httpx.Timeout(connect=min(10.0, left), read=left, write=min(10.0, left),
                                                     pool=min(10.0, left)), extensions=flight.extensions) as r:
                self.cutter.attach(flight, r)
                if r.status_code != 200:  # a redirect too: not followed, not believed
                    return None, None
                body = _read_capped(r, MAX_IDENTIFY_BYTES, path)
                if flight.cut:
                    return None, None
        except Exception:  # noqa: BLE001 (cut, stalled, refused, over the cap, a broken answer: not recognised)
            return None, None
        finally:
            self.cutter.remove(flight)
        try:
            return json.loads(body), body
        except (ValueError, RecursionError):
            return None, body

    # ------------------------------------------------------------------ the server's tokenizer
    def _post_json(self, path: str, payload: dict, cap: int = MAX_TOKENIZE_BYTES) -> tuple[int, object]:
        """POST JSON, read at most `cap` bytes of the answer → (HTTP status, parsed JSON or None). One kept-alive
        connection serves every such call (fitting a prompt asks the tokenizer a few times)."""
        import httpx

        if getattr(self, "_aux", None) is None:
            self._aux = self._client(1)
        # the run's deadline holds here too: a tokenizer that trickles its answer must not outlive the run
        deadline, which = self._deadline()
        late = f"endpoint: {path} did not answer before the {which}'s deadline"
        if time.monotonic() >= deadline:
            raise ModelError(late)
        flight = _Flight(deadline)
        self.cutter.add(flight)
        try:
            with self._aux.stream(
                    "POST", f"{self.origin}{self.base}{path}", content=json.dumps(payload),
                    headers={"Content-Type": "application/json", "Accept": "application/json",
                             "Accept-Encoding": "identity"}) as r:
                self.cutter.attach(flight, r)
                body = _read_capped(r, cap, f"endpoint: {path}")
                if flight.cut:
                    raise ModelError(late)
        except (httpx.HTTPError, OSError):
            if flight.cut:
                self._aux.close()  # its connection was shut down: the next call opens a new one
                self._aux = None
                raise ModelError(late) from None
            raise
        finally:
            self.cutter.remove(flight)
        try:
            return r.status_code, json.loads(body)
        except (ValueError, RecursionError):
            return r.status_code, None

    def _tokens_of(self, answer: object) -> int | None:
        """The token count in a /tokenize answer: {"count": n} or {"tokens": [...]}; None if neither."""
        if not isinstance(answer, dict):
            return None
        n = answer.get("count")
        if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
            return n
        toks = answer.get("tokens")
        return len(toks) if isinstance(toks, list) else None

    def _usage_prompt_tokens(self, content: str) -> int | None:
        """usage.prompt_tokens of one short non-streamed request with `content` as its user turn."""
        status, ans = self._post_json("/v1/chat/completions", {
            "model": self.model_name, "messages": [{"role": "user", "content": content}], "max_tokens": 1,
            "temperature": 0, "stream": False}, cap=MiB)
        usage = ans.get("usage") if status == 200 and isinstance(ans, dict) else None
        n = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None

    def _find_tokenizer(self) -> dict:
        """How to count a prompt in the server's own tokens, tried in this order:

        - vLLM: POST /tokenize {"model", "messages", "add_generation_prompt": true} → {"count", "max_model_len",
          …}: the chat-templated count itself;
        - llama.cpp's llama-server: POST /tokenize {"content"} → {"tokens"};
        - llama-cpp-python's server: POST /extras/tokenize {"input"} → {"tokens"};
        the last two count the text alone: the chat template's own tokens are measured once as usage.prompt_tokens
        of a calibration request minus the count of its text;
        - none of them: approximated from two calibration requests (tokens per word of the filler text)."""
        import httpx

        from probes.workload import _words, opening

        probe_text = "Calibration of the prompt length: how many tokens is this text?"
        msgs = [{"role": "user", "content": probe_text}]
        try:
            status, ans = self._post_json("/tokenize", {"model": self.model_name, "messages": msgs,
                                                        "add_generation_prompt": True})
            if status == 200 and isinstance(ans, dict) and isinstance(ans.get("count"), int) \
                    and "max_model_len" in ans and (self._tokens_of(ans) or 0) > 0:
                ctx = ans.get("max_model_len")
                if isinstance(ctx, int) and ctx > 0 and self.context_tokens is None:
                    self.context_tokens = ctx
                return {"mode": "chat", "how": "the server's POST /tokenize with the chat messages (vLLM): the "
                                               "chat-templated count itself"}
            for path, key, who in (("/tokenize", "content", "llama.cpp's llama-server"),
                                   ("/extras/tokenize", "input", "llama-cpp-python's server")):
                status, ans = self._post_json(path, {key: probe_text, "model": self.model_name})
                n = self._tokens_of(ans) if status == 200 else None
                if n:
                    total = self._usage_prompt_tokens(probe_text)
                    if total is None:
                        return {"mode": "content", "path": path, "key": key, "overhead": 0, "exact": False,
                                "how": f"the server's POST {path} ({who}) counts the text; the server reports no "
                                       "usage, so the chat template's own tokens are not counted (approximate)"}
                    return {"mode": "content", "path": path, "key": key, "overhead": total - n, "exact": True,
                            "how": f"the server's POST {path} ({who}) counts the text; the chat template adds "
                                   f"{total - n} tokens, measured once from usage.prompt_tokens of a calibration "
                                   "request"}
            head = opening(0, 0, "Calibration").split()
            short, long_ = len(head) + 40, len(head) + 400
            a, b = self._usage_prompt_tokens(_words(head, short)), self._usage_prompt_tokens(_words(head, long_))
        except (httpx.HTTPError, OSError) as err:
            raise ModelError(f"endpoint: counting prompt tokens failed: {_http_error(err)}") from None
        if a is None or b is None or b <= a:
            return {"mode": "words", "per_word": 1.3, "overhead": 0,
                    "how": "the server has no tokenize endpoint and reports no usage: prompt lengths are a guess "
                           "of 1.3 tokens per word"}
        per = (b - a) / (long_ - short)
        return {"mode": "words", "per_word": per, "overhead": a - per * short,
                "how": f"the server has no tokenize endpoint: prompt lengths are approximated from two calibration "
                       f"requests ({per:.3f} tokens per word, {a - per * short:.0f} tokens of chat template); the "
                       "records' prompt_tokens are the server's usage.prompt_tokens"}

    def count_prompt_tokens(self, text: str) -> int | None:
        import httpx

        if self.tokenizer is None:
            self.tokenizer = self._find_tokenizer()
            self.notes.append(f"prompt tokens: {self.tokenizer['how']}")
        t = self.tokenizer
        if t["mode"] == "words":
            return round(t["overhead"] + t["per_word"] * len(text.split()))
        try:
            if t["mode"] == "chat":
                status, ans = self._post_json("/tokenize", {
                    "model": self.model_name, "messages": [{"role": "user", "content": text}],
                    "add_generation_prompt": True})
            else:
                status, ans = self._post_json(t["path"], {t["key"]: text, "model": self.model_name})
        except (httpx.HTTPError, OSError) as err:
            raise ModelError(f"endpoint: counting prompt tokens failed: {_http_error(err)}") from None
        n = self._tokens_of(ans) if status == 200 else None
        if n is None:
            raise ModelError(f"endpoint: the server's tokenizer answered HTTP {status} without a token count")
        return n + (t.get("overhead") or 0)

    def counts_exactly(self) -> bool:
        t = self.tokenizer
        return t is not None and t["mode"] != "words" and t.get("exact", True)

    def exact_count(self, text: str) -> int | None:
        """The prompt's tokens when the server's own tokenizer counted them exactly, else None."""
        if self.tokenizer is None:
            self.count_prompt_tokens(text)  # finds the tokenizer (and says which in the notes)
        return self.count_prompt_tokens(text) if self.counts_exactly() else None

    def _request(self, client: httpx.Client, index: int, prompt: Prompt, settings: ProbeSettings
                 ) -> RequestRecord:
        """One streamed request → its record; never raises (a client thread must not die silently)."""
        import httpx

        submitted = time.perf_counter()
        times: list[float] = []
        status, cause, end = "ok", None, None
        if time.monotonic() >= self.run_deadline:
            return RequestRecord(index=index, submitted_s=submitted, finished_s=submitted, status="error",
                                 error="not started: the run's deadline passed")
        deadline, which = self._deadline()
        left = max(0.001, deadline - time.monotonic())
        flight = _Flight(deadline)
        self.cutter.add(flight)
        want = prompt.max_tokens
        state = {"done": False, "finished": False, "usage": None}
        body = json.dumps({"model": self.model_name, "messages": [{"role": "user", "content": prompt.text}],
                           "max_tokens": want, "temperature": 0, "stream": True,
                           "stream_options": {"include_usage": True}, "ignore_eos": True, "min_tokens": want})

        def cut_text() -> str:
            if which == "run":
                return f"cut at the run's deadline ({self.run_budget_s:g} s)"
            return f"cut at the request's deadline ({self.request_s:g} s)"

        try:
            with client.stream(
                    "POST", f"{self.origin}{self.base}/v1/chat/completions", content=body,
                    headers={"Content-Type": "application/json", "Accept": "text/event-stream",
                             "Accept-Encoding": "identity"},
                    timeout=httpx.Timeout(connect=min(10.0, left), read=min(self.stall_s, left), write=10.0,
                                          pool=10.0)) as r:
                self.cutter.attach(flight, r)
                if r.status_code != 200:
                    raise _Fail(self._status_cause(r))
                complete = lambda: state["done"] or state["finished"] or len(times) >= want  # noqa: E731
                try:
                    self._read_stream(r, times, want, state, deadline)
                except (httpx.ReadTimeout, httpx.RemoteProtocolError, httpx.ReadError) as err:
                    cut = flight.cut or time.monotonic() >= deadline
                    if complete():
                        if cut or isinstance(err, httpx.ReadTimeout):  # every token came; the stream stayed open
                            self._note("kept-open", "the server kept a stream open after its last token; the "
                                                    "client closed it (E2E ends at the last token)")
                            end = times[-1] if times else None
                    elif cut:
                        raise _Ended(cut_text()) from None
                    elif isinstance(err, httpx.ReadTimeout):
                        raise _Fail(f"stalled: no data for {self.stall_s:g} s") from None
                    else:
                        raise _Ended("the connection closed", closed=True) from None
                except _DeadlineHit:
                    if not complete():
                        raise _Ended(cut_text()) from None
                if flight.cut and not complete():
                    raise _Ended(cut_text())
            if not times:
                raise _Fail("the server streamed no tokens")
            if not complete():
                raise _Ended("the stream closed", closed=True)
            got = (state["usage"] or {}).get("completion_tokens") or len(times)
            if self.exact and got < want:  # the server stopped early: an output of the wrong length
                self._note("early", "the server ended some streams before their output length (it may ignore "
                                    "ignore_eos and min_tokens); those requests are incomplete")
                raise _Ended("the server finished the stream")
        except _Fail as err:
            status, cause = "error", str(err)
        except _Ended as err:
            why = " without [DONE] or finish_reason" if err.closed else ""
            if times:
                status, cause = "incomplete", f"incomplete: {err} after {len(times)} of {want} tokens{why}"
            else:
                status, cause = "error", f"no tokens: {err} before any token arrived{why}"
        except httpx.ReadTimeout:  # waiting for the response's headers
            if flight.cut or time.monotonic() >= deadline:
                status, cause = "error", f"no response: {cut_text()}"
            else:
                status, cause = "error", f"stalled: no response for {self.stall_s:g} s"
        except httpx.HTTPError as err:
            status, cause = "error", _http_error(err)
        except Exception as err:  # whatever else: recorded with its cause, never a dead client thread
            status, cause = "error", f"{type(err).__name__}: {excerpt(str(err))}"
        finally:
            self.cutter.remove(flight)
        usage = state["usage"] or {}
        if status == "ok" and usage.get("completion_tokens"):
            self.chunk_tokens.append((len(times), usage["completion_tokens"]))
        return RequestRecord(index=index, submitted_s=submitted, prompt_tokens=usage.get("prompt_tokens"),
                             first_token_s=times[0] if times else None, token_times_s=times,
                             output_tokens=len(times), finished_s=end or time.perf_counter(), status=status,
                             error=cause)

    @staticmethod
    def _status_cause(r: httpx.Response) -> str:
        where_to = r.headers.get("location") if 300 <= r.status_code < 400 else None
        if where_to:
            return f"HTTP {r.status_code}: a redirect to {excerpt(where_to)}, not followed"
        head = bytearray()
        if _encoding(r) is not None:
            return f"HTTP {r.status_code} (a compressed body, not read)"
        try:
            for chunk in r.iter_raw():
                head += chunk
                if len(head) >= MAX_ERROR_BYTES:
                    break
        except Exception:  # the body is only for the message: whatever it got so far will do
            pass
        cut = len(head) >= MAX_ERROR_BYTES
        text = bytes(head[:MAX_ERROR_BYTES]).decode("utf-8", "replace")
        if cut:  # a key the body echoes may end the cut half-written: what is left of it is masked as well
            text = redact_text(text.rstrip("\ufffd"), _SECRETS, cut=True)
        return f"HTTP {r.status_code}: {excerpt(text)}" if text.strip() else f"HTTP {r.status_code} (no body)"

    def _read_stream(self, r: httpx.Response, times: list[float], want: int, state: dict, deadline: float
                     ) -> None:
        """Read SSE lines until [DONE], the end of the body, or one content chunk beyond `want` (then stop).

        The deadline is checked here too, in case the cutter could not reach the socket."""
        clock = time.perf_counter
        enc = _encoding(r)
        if enc is not None:
            raise _Fail(f"the server compressed its stream ({excerpt(enc)}) although asked for identity; not read")
        for raw in bounded_lines(r.iter_raw()):
            if time.monotonic() >= deadline:
                raise _DeadlineHit
            if raw.startswith(b":"):
                continue  # a comment (keep-alive)
            if not raw.startswith(b"data:"):
                if raw.split(b":", 1)[0] in (b"event", b"id", b"retry"):
                    continue  # SSE fields the OpenAI stream does not need
                raise _Fail(f"not an event stream: {excerpt(raw)}")
            data = raw[5:].strip().decode("utf-8", "replace")
            if data == "[DONE]":
                state["done"] = True
                return
            pieces, finished, usage = parse_event(data)
            if usage is not None:
                state["usage"] = usage
            state["finished"] = state["finished"] or finished
            for _ in pieces:
                if len(times) >= want:  # more than max_tokens: the client stops the stream itself
                    self._note("beyond", f"the server streamed more than max_tokens ({want}) chunks; the client "
                                         "stopped each such stream at max_tokens")
                    return
                times.append(clock())

    def run(self, prompts, settings, on_done):
        prompts = prompts_of(prompts, settings)
        with self._client(max(1, settings.concurrency)) as client:
            out = run_clients(prompts, settings.concurrency, lambda i, p: self._request(client, i, p, settings),
                              on_done)
        if self.exact and any(r.prompt_tokens is None for r in out):  # after the timed run: no usage streamed
            counted, seen = 0, {}
            try:
                for r in out:
                    text = prompts[r.index].text
                    if r.prompt_tokens is None and text not in seen:
                        seen[text] = self.exact_count(text)
                    if r.prompt_tokens is None and seen[text] is not None:
                        r.prompt_tokens = seen[text]
                        counted += 1
            except ModelError as err:  # the measured records stand; their prompt length stays unknown
                self.notes.append(f"prompt_tokens not counted after the run: {err}")
            if counted:
                self._note("counted-after", "the server streamed no usage: the records' prompt_tokens were counted "
                                            "after the run with the server's own tokenizer")
        mismatched = [(c, u) for c, u in self.chunk_tokens if c != u]
        if mismatched:
            self.notes.append(f"{len(mismatched)} request(s) streamed fewer chunks than the server's token count "
                              f"(e.g. {mismatched[0][0]} chunks for {mismatched[0][1]} tokens): ITL is per chunk")
        return out
