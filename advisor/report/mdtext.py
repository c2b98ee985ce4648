"""Text going into Markdown: user and model text escaped as literal text (`md_escape`), long runs given break
opportunities (`fold`), bare URLs made explicit links that end where the URL ends (`link_urls`), and a knowledge
`source` shown as its title and section, linked (`cite`).

Without the last, a Chinese sentence "（来源：https://example.org/page）。" is autolinked up to the next space,
so the link takes the full-width "）。" with it and 404s.
"""
from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from advisor.knowledge.load import Knowledge

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


# C0/C1 controls, and the bidirectional overrides and isolates (U+202A-202E, U+2066-2069, U+200E/200F) that make a
# server's model id read backwards or hide text in the report (the audit's "Trojan source" strings)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


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


def cite(source: str, knowledge: Knowledge, lang: str = "en") -> str:
    """A `source` from knowledge/*.yaml as Markdown a reader can follow: "[vLLM docs — Paged Attention](url)", or a
    seed article by its title and section, "Choosing an inference stack: … (§8)" (linked when sources.yaml knows
    where it appeared). A source the catalogue does not list shows as itself, escaped, its URL linked."""
    source = " ".join(str(source or "").split())
    if not source:
        return ""
    c = knowledge.cite(source, lang)
    if c is None:
        return link_urls(md_escape(source))
    text = md_escape(c.title)
    if c.url:
        text = f"[{text}]({quote(c.url, safe=_URL_SAFE)})"
    if c.section:
        text += f"（§{md_escape(c.section)}）" if lang == "zh" else f" (§{md_escape(c.section)})"
    return text


def cite_reason(reason, knowledge: Knowledge, lang: str = "en") -> str:
    """A reason's source, then the version it speaks for and the day it was read, where the knowledge says them."""
    text = cite(reason.source, knowledge, lang)
    extra = [x for x in (getattr(reason, "version", None),
                         knowledge.s("cite_read", lang, date=reason.read) if getattr(reason, "read", None) else None)
             if x]
    if not extra:
        return text
    if lang == "zh":  # the version is the source's own label (English), quoted as such
        extra[0] = f"“{extra[0]}”" if getattr(reason, "version", None) else extra[0]
        return f"{text}（{md_escape('；'.join(extra))}）"
    return f"{text} ({md_escape('; '.join(extra))})"


_URL_SAFE = ":/?#[]@!$&'*+,;=%~"  # everything but what would end or break a Markdown link: spaces, ( ) < > "


def seed_lines(knowledge: Knowledge, lang: str = "en") -> list[str]:
    """The seed articles the project started from, one Markdown line each: title (and the original title when it is
    in another language), site, file name, what the article is to this project, and its link where one is known."""
    lines = []
    for name, a in knowledge.sources.seeds.items():
        line = f"**{md_escape(a.title.get(lang))}**"
        if a.original != lang:
            line += f" “{md_escape(a.title.get(a.original))}”"
        if a.site:
            line += ("，" if lang == "zh" else ", ") + md_escape(a.site.get(lang))
        line += f" (`{name}`)" if lang != "zh" else f"（`{name}`）"
        line += " — " + md_escape(a.note.get(lang))
        if a.url:
            label = knowledge.s("cite_seed_copy" if a.url_is_copy else "cite_seed_link", lang)
            line += f" [{md_escape(label)}]({quote(a.url, safe=_URL_SAFE)})"
        lines.append(line)
    return lines
