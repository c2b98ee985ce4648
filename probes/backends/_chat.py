"""Render a model's own chat template (Jinja) without importing an engine."""
from __future__ import annotations

import functools
import json
from pathlib import Path


def chat_template(model_dir: Path) -> str | None:
    f = model_dir / "chat_template.jinja"
    if f.is_file():
        return f.read_text(encoding="utf-8")
    cfg = model_dir / "tokenizer_config.json"
    if cfg.is_file():
        t = json.loads(cfg.read_text(encoding="utf-8")).get("chat_template")
        if isinstance(t, str):
            return t
    return None


@functools.lru_cache(maxsize=8)
def _compiled(template: str):
    """Compiled once: prompts are fitted by rendering many times, and a render sits inside the timed TTFT span."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(template)


def render(template: str | None, prompt: str) -> str:
    if not template:
        return prompt
    return _compiled(template).render(messages=[{"role": "user", "content": prompt}], add_generation_prompt=True,
                                      bos_token="", eos_token="")


def hf_chat_text(tok, prompt: str) -> str:
    """A single user turn through a Hugging Face tokenizer's chat template."""
    return tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)


def hf_token_count(tok, text: str) -> int:
    return len(tok(text, add_special_tokens=False)["input_ids"])
