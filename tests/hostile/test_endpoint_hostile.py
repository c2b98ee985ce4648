"""The endpoint probe against hostile OpenAI-compatible servers: every case ends in bounded time and memory.

Each server is a raw HTTP/1.1 server on 127.0.0.1 in this process, so it can send what no well-kept server
would (an endless line, a lying Content-Length, a gzip bomb, …). Each test runs the real probe (a child
process) and checks the run's and every request's status and cause, the time taken, the peak RSS of the
probe's process tree, and that no probe process is left behind.
"""
from __future__ import annotations

import functools
import json
import socket
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Callable

import psutil
import pytest

from probes.backends.endpoint import MAX_LINE_BYTES, _Fail, bounded_lines, excerpt, parse_event
from probes.result import ProbeSettings
from probes.runner import run_probe

MAX_SECONDS = 10.0  # generous: the probe's own bounds here are 1 s (stall) and 3 s (request)
MAX_RSS_MB = 1024.0
EVENT_STREAM = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"


def token(i: int) -> bytes:
    ev = {"choices": [{"index": 0, "delta": {"content": f"t{i} "}, "finish_reason": None}]}
    return f"data: {json.dumps(ev)}\n\n".encode()


FINISH = b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}\n\n'
USAGE = b'data: {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 16}}\n\n'
DONE = b"data: [DONE]\n\n"


# ---------------------------------------------------------------------------------------------- the server
class Hostile:
    """Answers GET with `get` and POST with `post`; each is called as fn(conn, n, stop) with n the
    0-based count of that method's requests so far, and may write anything to the socket."""

    def __init__(self, post: Callable, get: Callable) -> None:
        self.post, self.get = post, get
        self.stop = threading.Event()
        self.counts = {"GET": 0, "POST": 0}
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def close_listener(self) -> None:
        try:  # shutdown first: a plain close would leave the port listening until the blocked accept() returns
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()

    def shutdown(self) -> None:
        self.stop.set()
        self.close_listener()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                got = conn.recv(4096)
                if not got:
                    return
                head += got
            head, _, body = head.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method = lines[0].split(" ")[0]
            length = next((int(v) for k, _, v in (x.partition(":") for x in lines[1:])
                           if k.strip().lower() == "content-length"), 0)
            while len(body) < length:
                got = conn.recv(65536)
                if not got:
                    return
                body += got
            with self.lock:
                n = self.counts.setdefault(method, 0)
                self.counts[method] += 1
            (self.get if method == "GET" else self.post)(conn, n, self.stop)
        except OSError:  # the client went away: that is what a cut looks like from here
            pass
        finally:
            conn.close()


def models_ok(conn, n, stop):
    body = json.dumps({"object": "list", "data": [{"id": "hostile"}]}).encode()
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


def forever(conn, stop, chunk: bytes, pause: float = 0.0):
    while not stop.is_set():
        conn.sendall(chunk)
        if pause:
            time.sleep(pause)


# ---------------------------------------------------------------------------------------------- behaviours
def endless_line(conn, n, stop):
    conn.sendall(EVENT_STREAM + b"data: ")
    forever(conn, stop, b"a" * 65536)


def endless_models(conn, n, stop):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                 b'{"object": "list", "data": [')
    forever(conn, stop, b'{"id": "x"}, ' * 4096)


def models_not_json(conn, n, stop):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\nConnection: close\r\n\r\n<html>hi</html")


def models_not_a_list(conn, n, stop):
    conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{"data": 5}')


def gzip_bomb(conn, n, stop):
    """Declares gzip although asked for identity; a few KB on the wire are endless comment lines."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
                 b"Connection: close\r\n\r\n")
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = (b": " + b"k" * 1021 + b"\n") * 1024  # 1 MiB of keep-alive comments
    while not stop.is_set():
        out = z.compress(block) + z.flush(zlib.Z_SYNC_FLUSH)
        conn.sendall(out)


@functools.cache
def _double_gzip_zeros(mib: int) -> bytes:
    """`mib` MiB of zeros, gzipped twice: a few KB on the wire (the audit's bomb: 10 KB that inflate to 6 GiB; 512
    MiB is enough to pass the probe's 1 GiB RSS bound here once inflated, and is built in about a second)."""
    inner = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    once = b"".join(inner.compress(block) for _ in range(mib)) + inner.flush()
    outer = zlib.compressobj(9, zlib.DEFLATED, 31)
    return outer.compress(once) + outer.flush()


def models_double_gzip(conn, n, stop):
    BOMB = _double_gzip_zeros(512)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip, gzip\r\n"
                 b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(BOMB), BOMB))


def stream_double_gzip(conn, n, stop):
    BOMB = _double_gzip_zeros(512)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip, gzip\r\n"
                 b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(BOMB), BOMB))


def full(conn, n, stop, tokens=16):
    conn.sendall(EVENT_STREAM + b"".join(token(i) for i in range(tokens)) + FINISH + USAGE + DONE)


def early_close(conn, n, stop):
    conn.sendall(EVENT_STREAM + token(0) + token(1) + token(2))


def ok_then_early_close(conn, n, stop):
    (full if n == 0 else early_close)(conn, n, stop)


def finish_then_close(conn, n, stop):
    conn.sendall(EVENT_STREAM + b"".join(token(i) for i in range(5)) + FINISH)


def malformed(payload: bytes):
    def send(conn, n, stop):
        conn.sendall(EVENT_STREAM + token(0) + b"data: " + payload + b"\n\n" + token(1) + DONE)
    return send


def endless_tokens(conn, n, stop):
    conn.sendall(EVENT_STREAM)
    i = 0
    while not stop.is_set():
        conn.sendall(b"".join(token(i + k) for k in range(64)))
        i += 64


def all_tokens_then_silent(conn, n, stop):
    conn.sendall(EVENT_STREAM + b"".join(token(i) for i in range(16)))
    stop.wait(30)


def keepalives(tokens: int):
    def send(conn, n, stop):
        conn.sendall(EVENT_STREAM + b"".join(token(i) for i in range(tokens)))
        forever(conn, stop, b": keep-alive\n\n", pause=0.05)
    return send


def http_500_huge(conn, n, stop):
    conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 100000000000\r\nConnection: close\r\n\r\n")
    forever(conn, stop, b"x" * 65536)


def http_500_html(conn, n, stop):
    body = (b"<html>\n<head><title>500 \x1b[31mInternal\x07 Server Error</title></head>\n<body>"
            + b"y" * 2000 + b"</body></html>")
    conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/html\r\nConnection: close\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


def never_answers(conn, n, stop):
    stop.wait(30)


def headers_only(conn, n, stop):
    conn.sendall(EVENT_STREAM)
    stop.wait(30)


def endless_headers(conn, n, stop):
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Pad: ")
    forever(conn, stop, b"a" * 65536)


def drip_headers(conn, n, stop):
    """Audit (medium): headers one byte every 0.5 s, never ending: no single read ever stalls, so only a deadline
    that covers the headers too ends it (the cutter was attached after the headers)."""
    head = b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 100_000
    for b in head:
        if stop.wait(0.5):
            return
        conn.sendall(bytes([b]))


def redirect(conn, n, stop):
    conn.sendall(b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:9/elsewhere\r\n"
                 b"Content-Length: 0\r\nConnection: close\r\n\r\n")


def empty_stream(conn, n, stop):
    conn.sendall(EVENT_STREAM)


def done_without_tokens(conn, n, stop):
    conn.sendall(EVENT_STREAM + DONE)


# ---------------------------------------------------------------------------------------------- cases
@dataclass
class Case:
    id: str
    post: Callable = full
    get: Callable = models_ok
    run_status: str = "error"
    reason: str | None = None  # a substring of the run's reason
    statuses: list[str] = field(default_factory=list)  # per request, in order; [] = not checked
    causes: list[str] = field(default_factory=list)  # per request, substrings of `error`
    settings: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    max_seconds: float = MAX_SECONDS
    check: Callable | None = None


def _tokens_kept(res):
    assert [r.output_tokens for r in res.requests] == [3, 3]
    assert all(len(r.token_times_s) == 3 and r.first_token_s for r in res.requests)
    assert res.requests_incomplete == 2 and res.errors == 0 and res.requests_ok == 0


def _one_ok_one_incomplete(res):
    assert (res.requests_ok, res.requests_incomplete, res.errors, res.requests_total) == (1, 1, 0, 2)
    assert res.output_tokens_total == 16  # the incomplete request's 3 tokens are not in the figures
    assert res.requests[1].output_tokens == 3
    assert res.prompt_tokens_total == 7


def _stopped_at_max(res):
    assert [r.output_tokens for r in res.requests] == [16, 16]
    assert any("more than max_tokens" in n for n in res.notes)


def _kept_open(res):
    assert [r.output_tokens for r in res.requests] == [16, 16]
    assert any("kept a stream open" in n for n in res.notes)


def _short_excerpt(res):
    for r in res.requests:
        assert len(r.error) < 200, r.error


ERROR2 = ["error", "error"]
MALFORMED = {
    "list-not-object": b"[1,2]",
    "usage-a-string": b'{"choices": [], "usage": "x"}',
    "usage-count-not-int": b'{"choices": [], "usage": {"completion_tokens": "lots"}}',
    "choices-a-number": b'{"choices": 5}',
    "choice-a-number": b'{"choices": [7]}',
    "delta-a-string": b'{"choices": [{"delta": "x"}]}',
    "content-a-number": b'{"choices": [{"delta": {"content": 5}}]}',
    "invalid-json": b'{"choices": [',
    "control-chars": b"\x1b]0;owned\x07{\x1b[2J",
}

CASES = [
    Case("endless-single-line", endless_line, statuses=ERROR2, causes=["a stream line exceeded 1 MiB"] * 2,
         reason="a stream line exceeded 1 MiB"),
    Case("endless-models-body", get=endless_models, reason="/v1/models answered more than 1 MiB"),
    Case("models-not-json", get=models_not_json, reason="did not return an OpenAI model list"),
    Case("models-not-a-list", get=models_not_a_list, reason="did not return an OpenAI model list"),
    Case("models-redirect", get=redirect,
         reason="HTTP 307 (a redirect to 'http://127.0.0.1:9/elsewhere', not followed)"),
    Case("gzip-bomb-of-keepalives", gzip_bomb, statuses=ERROR2,
         causes=["the server compressed its stream ('gzip') although asked for identity; not read"] * 2),
    # the audit's compression bomb: a body of a few KB declared `gzip, gzip` that inflates to 2 GiB, on the model
    # list and on the chat stream; it is refused before a byte is inflated (before: 4.1 and 6.2 GB peak RSS and 18 and
    # 25 s for the 2 GiB version)
    Case("double-gzip-models-bomb", get=models_double_gzip,
         reason="/v1/models: the server compressed its answer ('gzip, gzip') although asked for identity"),
    Case("double-gzip-stream-bomb", stream_double_gzip, statuses=ERROR2,
         causes=["the server compressed its stream ('gzip, gzip') although asked for identity"] * 2),
    Case("early-close-after-3-tokens", early_close, statuses=["incomplete"] * 2,
         causes=["incomplete: the stream closed after 3 of 16 tokens without [DONE] or finish_reason"] * 2,
         reason="incomplete: the stream closed after 3 of 16", check=_tokens_kept),
    # half its requests ended early: the run is partial (more than 10 % failed), never ok; what finished is kept
    Case("one-ok-one-early-close", ok_then_early_close, run_status="partial", statuses=["ok", "incomplete"],
         settings={"concurrency": 1}, check=_one_ok_one_incomplete,
         reason="not measured: 1 of 2 requests failed or ended early: incomplete: the stream closed"),
    Case("finish-reason-then-close", finish_then_close, run_status="ok", statuses=["ok", "ok"],
         check=lambda res: [r.output_tokens for r in res.requests] == [5, 5]),
    *[Case(f"malformed-{name}", malformed(payload), statuses=ERROR2, causes=["malformed event: "] * 2,
           reason="malformed event: ") for name, payload in MALFORMED.items()],
    Case("error-event-in-stream", malformed(b'{"error": {"message": "out of memory"}}'), statuses=ERROR2,
         causes=["the server reported an error in the stream"] * 2),
    Case("endless-tokens-beyond-max", endless_tokens, run_status="ok", statuses=["ok", "ok"], check=_stopped_at_max),
    Case("all-tokens-then-silent", all_tokens_then_silent, run_status="ok", statuses=["ok", "ok"], check=_kept_open),
    Case("endless-keepalives-no-tokens", keepalives(0), statuses=ERROR2,
         causes=["no tokens: cut at the request's deadline (3 s) before any token arrived"] * 2),
    Case("tokens-then-endless-keepalives", keepalives(2), statuses=["incomplete"] * 2,
         causes=["incomplete: cut at the request's deadline (3 s) after 2 of 16 tokens"] * 2),
    Case("run-deadline", keepalives(2), statuses=["incomplete", "error"],
         causes=["incomplete: cut at the run's deadline (5.8 s) after 2 of 16 tokens",
                 "not started: the run's deadline passed"],
         settings={"timeout_s": 12, "concurrency": 1}, extra={"request_timeout_s": 100}, max_seconds=11.5),
    Case("http-500-huge-body", http_500_huge, statuses=ERROR2, causes=["HTTP 500: 'xxxx"] * 2, check=_short_excerpt),
    Case("http-500-html", http_500_html, statuses=ERROR2, causes=["HTTP 500: '<html> <head><title>500"] * 2,
         check=_short_excerpt),
    Case("accepts-never-answers", never_answers, statuses=ERROR2, causes=["stalled: no response for 1 s"] * 2),
    Case("headers-then-nothing", headers_only, statuses=ERROR2, causes=["stalled: no data for 1 s"] * 2),
    Case("endless-headers", endless_headers, statuses=ERROR2, causes=["RemoteProtocolError"] * 2),
    Case("models-headers-drip", get=drip_headers, reason="/v1/models did not finish within 3 s", max_seconds=15),
    Case("redirect-not-followed", redirect, statuses=ERROR2,
         causes=["HTTP 307: a redirect to 'http://127.0.0.1:9/elsewhere', not followed"] * 2),
    Case("empty-stream", empty_stream, statuses=ERROR2, causes=["the server streamed no tokens"] * 2),
    Case("done-without-tokens", done_without_tokens, statuses=ERROR2, causes=["the server streamed no tokens"] * 2),
]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _probe_processes() -> list[psutil.Process]:
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if "probes.child" in " ".join(p.cmdline()):
                out.append(p)
        except psutil.Error:
            continue
    return out


def _run(url: str, case: Case | None = None):
    case = case or Case("plain")
    kw = dict(engine="endpoint", endpoint=url, requests=2, concurrency=2, max_tokens=16, warmup=0,
              prompt_mix="short", timeout_s=60)
    kw.update(case.settings)
    kw["extra"] = {"stall_timeout_s": 1, "request_timeout_s": 3, **case.extra}
    pids = []
    t0 = time.monotonic()
    res = run_probe(ProbeSettings(**kw),
                    on_event=lambda e: pids.append(e["pid"]) if e.get("type") == "started" else None)
    elapsed = time.monotonic() - t0
    print(f"{case.id}: {elapsed:.2f} s, peak RSS {res.peak_rss_mb} MB (tree, sampled), "
          f"{res.peak_child_maxrss_mb} MB (child's high-water mark)")
    assert elapsed < case.max_seconds, f"{case.id} took {elapsed:.1f} s"
    # the parent's sampler looks every 0.25 s and starts afresh at 'load', so a case over sooner may have no sample
    # (None); the child's own high-water mark (ru_maxrss) cannot miss a peak
    assert res.peak_rss_mb is None or res.peak_rss_mb < MAX_RSS_MB, res.peak_rss_mb
    assert res.peak_child_maxrss_mb is not None and res.peak_child_maxrss_mb < MAX_RSS_MB, res.peak_child_maxrss_mb
    assert pids, "the probe's child never started"
    assert not _alive(pids[0]), "the probe's child is still running"
    assert not _probe_processes()
    return res


@pytest.fixture
def hostile():
    servers = []

    def start(post, get=models_ok):
        servers.append(Hostile(post, get))
        return servers[-1]

    yield start
    for s in servers:
        s.shutdown()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_server(hostile, case):
    if "double-gzip" in case.id:
        _double_gzip_zeros(512)  # built before the server answers (about a second), not while the probe waits
    res = _run(hostile(case.post, case.get).url, case)
    assert res.status == case.run_status, res.reason
    assert "timed out" not in (res.reason or "")
    if case.reason:
        assert case.reason in res.reason
    if res.reason:
        assert res.reason.isprintable() and len(res.reason) < 300, res.reason
    if case.statuses:
        assert [r.status for r in res.requests] == case.statuses, [r.error for r in res.requests]
    for r, cause in zip(res.requests, case.causes):
        assert r.error and cause in r.error, r.error
    for r in res.requests:
        assert r.error is None or r.error.isprintable(), r.error
        assert (r.status == "ok") == (r.error is None)
    assert res.requests_ok + res.requests_incomplete + res.errors == res.requests_total == len(res.requests)
    if case.check:
        assert case.check(res) is not False


def test_connection_refused_at_load():
    with socket.create_server(("127.0.0.1", 0)) as s:
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    res = _run(url)
    assert res.status == "error" and "is unreachable: connection failed" in res.reason, res.reason


def test_connection_refused_after_the_model_list(hostile):
    holder = {}

    def models_then_close(conn, n, stop):
        holder["server"].close_listener()
        models_ok(conn, n, stop)

    holder["server"] = srv = hostile(full, models_then_close)
    res = _run(srv.url)
    assert res.status == "error" and [r.status for r in res.requests] == ERROR2
    assert all("connection failed" in r.error for r in res.requests), [r.error for r in res.requests]


# ---------------------------------------------------------------------------------------------- the parts
def test_bounded_lines_splits_across_chunks_and_line_ends():
    chunks = [b"data: a\r", b"\ndata: b\n\n: c", b"omment\rdata: ", b"d"]
    assert list(bounded_lines(chunks)) == [b"data: a", b"data: b", b": comment", b"data: d"]


def test_bounded_lines_caps_a_line_and_the_body():
    with pytest.raises(_Fail, match="a stream line exceeded 1 MiB"):
        list(bounded_lines(iter([b"x" * 65536] * 17)))
    with pytest.raises(_Fail, match="a stream line exceeded 1 MiB"):
        list(bounded_lines(iter([b"\n" + b"x" * (MAX_LINE_BYTES + 1) + b"\n"])))
    with pytest.raises(_Fail, match="the stream exceeded 100 bytes"):
        list(bounded_lines(iter([b"ab\n"] * 40), max_total=100))


def test_parse_event_and_excerpt():
    assert parse_event('{"choices": [{"delta": {"content": "x"}, "finish_reason": "stop"}], '
                       '"usage": {"prompt_tokens": 3, "completion_tokens": 1}}') == (
        ["x"], True, {"prompt_tokens": 3, "completion_tokens": 1})
    assert parse_event('{"choices": null, "usage": null}') == ([], False, None)
    with pytest.raises(_Fail, match="usage.prompt_tokens is not a count"):
        parse_event('{"usage": {"prompt_tokens": true}}')
    text = excerpt("\x1b[31m" + "z" * 500)
    assert text.isprintable() and len(text) < 90 and text.startswith("'\\x1b[31m")
