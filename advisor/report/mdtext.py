"""Text going into Markdown: user and model text escaped as literal text (`md_escape`), long runs given break
opportunities (`fold`), and bare URLs made explicit links that end where the URL ends (`link_urls`).

Without the last, a Chinese sentence "（来源：https://example.org/page）。" is autolinked up to the next space,
so the link takes the full-width "）。" with it and 404s.
"""
from __future__ import annotations

import html
import re

# a URL stops at whitespace, angle brackets, quotes and CJK punctuation; trailing ASCII punctuation is not part of it
_URL = re.compile(r"(?<![(<\[\w/])https?://[^\s<>\"'`（）【】《》「」『』，。；：！？、\u3000]+")
_TRAIL = ".,;:!?)]}*_"


def link_urls(text: str) -> str:
    """Wrap each bare URL as <url> (a CommonMark autolink), leaving existing [text](url) links alone."""
    def wrap(m: re.Match) -> str:
        url = m.group(0)
        tail = ""
        while url and url[-1] in _TRAIL and not (url[-1] == ")" and url.count("(") >= url.count(")")):
            url, tail = url[:-1], url[-1] + tail
        return f"<{url}>{tail}"

    return _URL.sub(wrap, text)


_MD_SPECIAL = re.compile(r"([\\`*\[\]!|])")


def md_escape(text: object) -> str:
    """User/model text as literal Markdown text: HTML escaped (<, >, &) and the Markdown characters that make
    links, images, emphasis, code or table cells (\\ ` * [ ] ! |) backslash-escaped; newlines become spaces."""
    text = _CONTROL.sub("\ufffd", " ".join(str(text).split()))  # a terminal escape or NUL shows as �
    return html.escape(_MD_SPECIAL.sub(r"\\\1", text), quote=False)


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


ZWSP = "\u200b"  # zero-width space: a place where a browser may break a long token; removed for the PDF


def fold(text: str, limit: int = 300, token: int = 60) -> str:
    """Cut text to `limit` characters ("…") and give any unbroken run longer than `token` a break opportunity
    every `token` characters (a zero-width space), so a table cell stays printable and wraps in the browser
    (a 20,000-character path must not make a row taller than a page)."""
    text = str(text)
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return re.sub(r"[^\s\u200b]{%d,}" % (token + 1),
                  lambda m: ZWSP.join(m.group(0)[i:i + token] for i in range(0, len(m.group(0)), token)), text)
