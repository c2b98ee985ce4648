"""Credentials for an endpoint, and their redaction: a secret travels only in the request that needs it.

A server started with `--api-key` (vLLM, SGLang, llama-server) wants `Authorization: Bearer KEY`; some proxies take
`http://user:KEY@host` or `?api_key=KEY`. The key is given at run time (`--api-key-env NAME`, the Probe page's
password field) and kept in a private attribute of `ProbeSettings` that is never serialised; it reaches the engine
child through its environment (readable by this user only), never its argv. A URL's userinfo and credential-like
query or fragment parameters are replaced by `***` wherever a URL is stored, printed, logged or rendered:
`ProbeSettings` redacts its endpoint on construction (keeping the real one privately for the request) and
`ProbeResult` redacts every text it holds, so the history, the reports and the pages only ever see `***`. A key a
server echoes (in a model id, an error body) is masked in the result object itself (`ProbeResult.masked`): in the
probe child as the result is built, and in the parent value by value as it is read, never only in printed text; a
server's text cut at a size limit is redacted before the cut, or with the cut in mind (`redact_text(cut=True)`).

Redaction is by pattern over text, not by parsing, so it also catches a URL inside an error message; the patterns
are bounded (no nested quantifiers) and run in linear time.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable
from urllib.parse import unquote

MASK = "***"
# query or fragment parameters that carry a credential (lower case; `-` and `_` are alike)
CREDENTIAL_PARAMS = ("api_key", "apikey", "key", "token", "access_token", "id_token", "refresh_token", "sig",
                     "signature", "secret", "client_secret", "password", "passwd", "pwd", "auth", "x-api-key",
                     "api-key", "code", "session", "sessionid", "jwt")
ENV_URL = "PROBE_ENDPOINT_URL"  # the endpoint with its credentials, for the engine child only
ENV_KEY = "PROBE_API_KEY"  # the bearer key, for the engine child only
MIN_SECRET_CHARS = 4  # a shorter "secret" would mask ordinary words
MIN_CUT_CHARS = 3  # a text cut at a size limit: a secret's first characters (this many or more) at its end are masked

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,30}://)[^/\s@?#'\"<>]{1,2048}@")
# ... and any name one of whose words is one of these (hf_token, X-Amz-Signature, private_token, access_key,
# auth_token, client-credential, accessKey): masked by what the name says, not by a fixed list; "monkey" and
# "keyboard" are words of their own
_WORDS = frozenset({"token", "key", "secret", "signature", "credential", "credentials", "password", "passwd", "pwd",
                    "auth", "session", "jwt", "sig", "apikey"})
_FIXED = frozenset(n.lower().replace("-", "_") for n in CREDENTIAL_PARAMS)
_PARAM = re.compile(r"([?&#;])([\w.\-]{1,128})=([^&#;\s'\"<>]+)")


def _is_credential(name: str) -> bool:
    if name.lower().replace("-", "_") in _FIXED:
        return True
    words = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)
    return any(w.lower() in _WORDS for w in words)
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=\-]{4,}")


def redact_text(text: str, secrets: Iterable[str] = (), cut: bool = False) -> str:
    """`text` with every URL's userinfo, every credential-like parameter value, every `Bearer …` and each of
    `secrets` replaced by `***`. `cut`: the text was cut at a size limit (a server's error body), so a secret may
    end it half-written; its first MIN_CUT_CHARS or more characters there are masked too."""
    if not isinstance(text, str) or not text:
        return text
    for s in secrets:
        if not isinstance(s, str) or len(s) < MIN_SECRET_CHARS:
            continue
        # as given, and as a server echoes it inside JSON (a key with `"` or `\` arrives escaped)
        forms = dict.fromkeys((s, json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1]))
        for form in forms:
            if form in text:
                text = text.replace(form, MASK)
        if cut:
            text = _cut_secret(text, forms)
    if "@" in text:
        text = _USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    if "=" in text:
        text = _PARAM.sub(lambda m: f"{m.group(1)}{m.group(2)}={MASK}" if _is_credential(m.group(2)) else m.group(0),
                          text)
    if "earer" in text or "asic" in text:
        text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    return text


def _cut_secret(text: str, forms: Iterable[str]) -> str:
    """`text` with a secret's beginning at its very end (where a cut left it) masked."""
    for form in forms:
        for n in range(min(len(form) - 1, len(text), 4096), MIN_CUT_CHARS - 1, -1):
            if text.endswith(form[:n]):
                return text[:-n] + MASK
    return text


def redact_url(url: str | None) -> str | None:
    """The URL as it may be shown and stored."""
    return redact_text(url) if isinstance(url, str) else url


def redact_data(value: Any, secrets: Iterable[str] = (), depth: int = 0, keys: bool = True) -> Any:
    """Every string inside a JSON-like value redacted (dict keys too, unless `keys` is False: the field names of our
    own records, which a key that happens to be a word like "status" must not rename); bounded in depth (deeper is
    dropped)."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return redact_text(value, secrets)
    if depth > 32:
        return None
    if isinstance(value, dict):
        return {redact_text(k, secrets) if keys and isinstance(k, str) else k: redact_data(v, secrets, depth + 1, keys)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_data(v, secrets, depth + 1, keys) for v in value)
    return value


def secrets_of(url: str | None, api_key: str | None = None) -> list[str]:
    """The secret pieces of a URL (the userinfo's password or whole userinfo, credential parameter values) and the
    key: what must never appear in output, even where a server echoes it outside a URL."""
    out: list[str] = []
    if api_key:
        out.append(api_key)
    if isinstance(url, str):
        m = _USERINFO.search(url)
        if m:
            info = url[m.end(1):m.end() - 1]
            out.append(info)
            if ":" in info:
                out.append(info.split(":", 1)[1])
        for m in _PARAM.finditer(url):
            if _is_credential(m.group(2)):
                out.append(m.group(3))
    out += [unquote(s) for s in out if unquote(s) != s]
    return [s for s in out if len(s) >= MIN_SECRET_CHARS]
