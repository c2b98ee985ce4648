"""Credentials never leave the request: a known secret is grepped for in every output (issue 19, High 1).

A local stub OpenAI server wants `Authorization: Bearer KEY` and echoes whatever credential it was sent in its 401
bodies and in the model list (a hostile or careless server). The probe runs through the real CLI and child process,
then its JSON, stderr, a sweep, the history's file, the Markdown and PDF reports are searched for every secret piece.
"""
from __future__ import annotations

import base64
import http.server
import json
import shutil
import subprocess
import threading

import pytest

from tests.hostile.kit import bounded, send_json, stream_chat

KEY = "sk-TOPSECRET-9f3b2c1d"
PASSWORD = "pw-HUNTER2-77a1"
QUERY_TOKEN = "qt-ZEBRA-5e6f7a"
SECRETS = (KEY, PASSWORD, QUERY_TOKEN, base64.b64encode(f"bob:{PASSWORD}".encode()).decode())


class _Auth(http.server.BaseHTTPRequestHandler):
    seen: list[dict]

    def log_message(self, *a):
        pass

    def _who(self) -> str:
        return self.headers.get("Authorization", "")

    def _deny(self) -> None:
        send_json(self, 401, {"error": f"invalid credentials {self._who()} for {self.path}"})

    def do_GET(self):
        self.seen.append({"path": self.path, "auth": self._who()})
        if self._who() != f"Bearer {KEY}":
            return self._deny()
        # the model id itself echoes the URL with its query: what a careless proxy might do
        send_json(self, 200, {"object": "list", "data": [{"id": f"fake (asked {self.path})"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.seen.append({"path": self.path, "auth": self._who()})
        if self._who() != f"Bearer {KEY}":
            return self._deny()
        if not self.path.startswith("/v1/chat/completions"):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        stream_chat(self)


@pytest.fixture
def server():
    handler = type("H", (_Auth,), {"seen": []})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1], handler.seen
    srv.shutdown()


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def _url(port: int) -> str:
    return f"http://bob:{PASSWORD}@127.0.0.1:{port}/v1?api_key={QUERY_TOKEN}&x=1"


def test_no_secret_in_json_stderr_history_markdown_or_pdf(server, tmp_path):
    port, seen = server
    env = {"MY_KEY": KEY, "INFERENCE_ADVISOR_DATA": str(tmp_path / "data")}
    run = bounded(["-m", "probes", "run", "--engine", "endpoint", "--endpoint", _url(port), "--api-key-env", "MY_KEY",
                   "--requests", "3", "--warmup", "0", "--max-tokens", "4"], hard_limit_s=120, env=env)
    assert run.rc == 0, run.err[-800:]
    res = json.loads(run.out)
    assert res["status"] == "ok" and res["requests_ok"] == 3
    # the key went with every request, and only as the bearer token
    assert seen and all(s["auth"] == f"Bearer {KEY}" for s in seen)
    assert _leaks(run.out) == [] and _leaks(run.err) == []
    assert "***" in res["settings"]["endpoint"] and "***" in res["backend_settings"]["url"]
    assert res["backend_settings"]["auth"].startswith("bearer key")

    (tmp_path / "r.json").write_text(run.out)
    sweep = bounded(["-m", "probes", "sweep", "--engine", "endpoint", "--endpoint", _url(port),
                     "--api-key-env", "MY_KEY", "--concurrency", "1,2", "--warmup", "0", "--max-tokens", "4"],
                    hard_limit_s=180, env=env)
    assert sweep.rc in (0, 1), sweep.err[-800:]
    assert _leaks(sweep.out) == [] and _leaks(sweep.err) == []
    (tmp_path / "s.json").write_text(sweep.out)

    # the history, as the Probe page stores a run (its file's raw bytes, WAL included)
    from advisor.evidence import history
    from probes.result import ProbeResult

    db = tmp_path / "h.sqlite3"
    history.save(ProbeResult.model_validate_json(run.out), path=db)
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("h.sqlite3*"))
    assert _leaks(raw.decode("latin-1")) == []

    answers = tmp_path / "a.yaml"
    answers.write_text("concurrency: 1\nttft_p95_ms: 1000\n")
    for out in ("r.md", "r.pdf"):
        rep = bounded(["-m", "advisor", "report", "--answers", str(answers), "--probe", str(tmp_path / "r.json"),
                       "--sweep", str(tmp_path / "s.json"), "--lang", "en", "--out", str(tmp_path / out)],
                      hard_limit_s=120)
        assert rep.rc == 0, rep.err[-800:]
        assert _leaks(rep.out + rep.err) == []
    md = (tmp_path / "r.md").read_text()
    assert _leaks(md) == [] and r"\*\*\*" in md  # Markdown-escaped
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(tmp_path / "r.pdf"), "-"], capture_output=True, text=True).stdout
        assert _leaks(text) == [] and "***" in text
    assert _leaks((tmp_path / "r.pdf").read_bytes().decode("latin-1")) == []


def test_a_wrong_key_echoed_by_the_server_is_not_printed(server, tmp_path):
    port, seen = server
    wrong = "sk-WRONGKEY-0a0b0c0d"
    run = bounded(["-m", "probes", "run", "--engine", "endpoint", "--endpoint", f"http://127.0.0.1:{port}",
                   "--api-key-env", "MY_KEY", "--requests", "1", "--warmup", "0"], hard_limit_s=60,
                  env={"MY_KEY": wrong})
    assert seen and seen[0]["auth"] == f"Bearer {wrong}"  # it was sent ...
    assert run.rc != 0 and "HTTP 401" in run.out + run.err  # ... refused, and said so ...
    assert wrong not in run.out + run.err  # ... without the echoed key


def test_api_key_env_mistakes_are_one_line(tmp_path):
    for args, env, said in (
            (["--api-key-env", "NOPE_NOT_SET"], {}, "NOPE_NOT_SET is not set"),
            (["--api-key-env", "sk-abc-pasted-key"], {}, "NAME of an environment variable"),
            (["--api-key-env", "lowercasekey123"], {}, "(the name given) is not set")):
        out = bounded(["-m", "probes", "run", "--engine", "endpoint", "--endpoint", "http://127.0.0.1:9", *args],
                      env=env)
        line = out.one_line_error(2)
        assert said in line and "sk-abc" not in line and "lowercasekey123" not in line
    out = bounded(["-m", "probes", "run", "--engine", "llama.cpp", "--api-key-env", "MY_KEY"], env={"MY_KEY": KEY})
    assert "goes with --engine endpoint" in out.one_line_error(2)


def test_a_bad_endpoint_url_is_echoed_redacted():
    out = bounded(["-m", "probes", "run", "--engine", "endpoint", "--endpoint", f"ftp://bob:{PASSWORD}@host/"])
    line = out.one_line_error(2)
    assert PASSWORD not in line and "***" in line


def test_redaction_rules():
    from probes.redact import redact_text, redact_url

    assert redact_url("https://u:p4ss@h.example:8443/v1?key=abcd&model=x") == "https://***@h.example:8443/v1?key=***&model=x"
    assert redact_url("http://h/v1?token=t0k3n#access_token=zzzz") == "http://h/v1?token=***#access_token=***"
    for name in ("api_key", "API-KEY", "access_token", "sig", "Token"):
        assert redact_url(f"http://h/?{name}=SECRET1") == f"http://h/?{name}=***"
    assert redact_url("http://h/?monkey=1&keyboard=2") == "http://h/?monkey=1&keyboard=2"  # names, not substrings
    assert redact_text("failed: Authorization: Bearer sk-123456 at http://a:b@c") == \
        "failed: Authorization: Bearer *** at http://***@c"
    assert redact_text("the key abc123xyz was refused", ["abc123xyz"]) == "the key *** was refused"


def test_stored_rows_with_a_secret_are_shown_redacted(tmp_path):
    """A row written before redaction existed (or a result file from elsewhere) is redacted when read."""
    from probes.result import ProbeResult

    raw = {"engine": "endpoint", "status": "error", "reason": f"endpoint {_url(1)} is unreachable",
           "model": _url(1), "settings": {"engine": "endpoint", "endpoint": _url(1)},
           "backend_settings": {"url": _url(1)}, "notes": [f"asked {_url(1)}"],
           "requests": [{"index": 0, "submitted_s": 0.0, "error": f"HTTP 401 at {_url(1)}"}]}
    r = ProbeResult.model_validate(raw)
    assert _leaks(r.model_dump_json()) == []
    # the real URL is kept only privately, for the request, and never serialised
    assert r.settings.endpoint_url == _url(1) and PASSWORD not in r.settings.model_dump_json()


@pytest.mark.parametrize("name", ["hf_token", "X-Amz-Signature", "private_token", "access_key", "auth_token",
                                  "client-credential", "Session-Id"])
def test_a_credential_is_masked_by_what_its_name_says_not_by_a_list(name):
    """Audit: ?hf_token=, ?X-Amz-Signature=, ?private_token=, ?access_key=, ?auth_token= were stored in clear (the mask
    knew a fixed list of names). Any parameter whose name holds token, key, secret, signature, credential, password,
    auth or session is masked, in the stored settings and in any text."""
    from probes.redact import redact_text
    from probes.result import ProbeSettings

    url = f"http://10.0.0.2:8000/v1?{name}=s3cr3tValue42&model=llama"
    assert "s3cr3tValue42" not in redact_text(url) and "model=llama" in redact_text(url)
    s = ProbeSettings(engine="endpoint", endpoint=url)
    assert "s3cr3tValue42" not in s.model_dump_json()


def test_a_key_a_server_echoes_inside_json_is_masked_too():
    """A key holding `"` or `\\` comes back JSON-escaped in an echoed model id: the escaped form is masked as well."""
    import json

    from probes.redact import redact_text

    key = 'ab"cd\\\\ef-9876'
    echoed = json.dumps({"id": f"served-with-{key}"})
    assert key not in redact_text(echoed, [key]) and json.dumps(key)[1:-1] not in redact_text(echoed, [key])


def test_a_key_in_the_urls_query_is_sent_to_the_server_and_kept_nowhere():
    """Audit (medium): `?api_key=` in the endpoint URL was never sent to the server, although the README says a key
    in the URL works. The server now sees it on each request; the result keeps it masked."""
    import http.server
    import threading

    from probes.result import ProbeSettings
    from probes.runner import run_probe

    seen: list[str] = []

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            seen.append(self.path)
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/v1?api_key=s3cr3t-in-the-url"
        res = run_probe(ProbeSettings(engine="endpoint", endpoint=url, requests=1, timeout_s=30))
    finally:
        srv.shutdown()
    assert seen and all("api_key=s3cr3t-in-the-url" in p for p in seen), seen
    assert res.status != "ok" and "s3cr3t-in-the-url" not in res.model_dump_json()


class _Echoes(http.server.BaseHTTPRequestHandler):
    """A server that takes any key and echoes it: in its model id and owner, and in every chat error's body, where
    the key sits across the client's 300-byte cut (spaces before it fold away in the excerpt)."""

    def log_message(self, *a):
        pass

    def _key(self) -> str:
        return self.headers.get("Authorization", "").removeprefix("Bearer ")

    def do_GET(self):  # noqa: N802
        send_json(self, 200, {"object": "list", "data": [{"id": f"served-for-{self._key()}",
                                                           "owned_by": f"team-{self._key()}"}]})

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = (" " * 285 + f"invalid {self._key()} for this model").encode()
        self.send_response(400)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _pieces(text: str, secret: str = KEY, n: int = 6) -> list[str]:
    """Every n-character run of `secret` found in `text`: a cut-off key is a leak too."""
    return sorted({secret[i:i + n] for i in range(len(secret) - n + 1) if secret[i:i + n] in text})


@pytest.fixture
def echoing():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echoes)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


def _settings(url: str):
    from probes.result import ProbeSettings

    return ProbeSettings(engine="endpoint", endpoint=url, requests=2, warmup=0, timeout_s=60).with_credentials(KEY)


def test_the_result_object_itself_holds_no_piece_of_an_echoed_key(echoing):
    """Audit (medium): redaction must be in the parsed result, not only in its text. The result run_probe returns
    holds no piece of the key in any field (a key cut at the error body's 300 bytes kept its first characters)."""
    from probes.runner import run_probe

    res = run_probe(_settings(echoing))
    assert res.requests_total == 2 and res.errors == 2, res.reason
    assert _pieces(res.model_dump_json()) == [] and _pieces(repr(res)) == []
    assert "***" in res.backend_settings["model"] and all("***" in r.error for r in res.requests)


def test_the_childs_own_result_holds_no_echoed_key(echoing):
    """The result the probe child builds from the server's answers is redacted as built, before anything (its event
    pipe, a log, a stop signal's partial result) serialises it."""
    from probes.child import measure

    class _Quiet:
        def emit(self, event):
            pass

        def phase(self, *a, **k):
            pass

    res = measure(_settings(echoing), _Quiet())
    assert res.requests_total == 2, res.reason
    assert _pieces(res.model_dump_json()) == [] and _pieces(repr(res)) == []


def test_a_key_that_is_also_a_word_of_the_result_is_masked_without_breaking_it(echoing):
    """The child's result line was redacted as text: a key such as "status" (a field name of the result) turned
    `"status": "error"` into `"***": "error"`, and the run's result no longer read back. Masked value by value, the
    result keeps its shape and the echoed key is still masked."""
    from probes.result import ProbeSettings
    from probes.runner import run_probe

    res = run_probe(ProbeSettings(engine="endpoint", endpoint=echoing, requests=1, warmup=0,
                                  timeout_s=60).with_credentials("status"))
    assert res.status == "error" and res.requests_total == 1, res.reason
    assert res.backend_settings["model"] == "served-for-***"
