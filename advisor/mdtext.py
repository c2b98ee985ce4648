"""Text going into Markdown: bare URLs become explicit links that end where the URL ends.

Without this, a Chinese sentence "（来源：https://example.org/page）。" is autolinked up to the next space,
so the link takes the full-width "）。" with it and 404s.
"""
from __future__ import annotations

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
