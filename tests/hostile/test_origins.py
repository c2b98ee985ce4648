"""DNS rebinding (issue 19, High 2): only the loopback names may drive the app.

A foreign page whose name resolves to 127.0.0.1 sends its own name as Host (and as Origin, so the same-origin check
passes). The app's state and its probes travel over the WebSocket, so that upgrade is what must be refused, while
`localhost` and `127.0.0.1` still get the app. The server is started like `make run` (serve.py, the committed
config).
"""
from __future__ import annotations

import socket

import pytest

from tests.app.e2e import _serve


def _upgrade(port: int, host: str) -> str:
    """The status line the server answers a WebSocket upgrade sent with this Host and Origin."""
    req = (f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
           f"Sec-WebSocket-Protocol: streamlit\r\nOrigin: http://{host}:{port}\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(req.encode())
        return s.recv(4096).decode("latin-1").split("\r\n", 1)[0]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with _serve(tmp_path_factory.mktemp("data")) as (url, _proc):
        yield int(url.rsplit(":", 1)[1])


@pytest.mark.parametrize("host", ["evil.example", "attacker.test", "127.0.0.1.nip.io", "localhost.evil.example"])
def test_a_foreign_host_cannot_open_the_websocket(app, host):
    status = _upgrade(app, host)
    assert " 101 " not in status, status
    assert status.startswith("HTTP/1.1 4"), status


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_the_loopback_names_still_serve(app, host):
    assert " 101 " in _upgrade(app, host)
