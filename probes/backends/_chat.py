"""Render a model's own chat template (Jinja) without importing an engine."""
from __future__ import annotations

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


def render(template: str | None, prompt: str) -> str:
    if not template:
        return prompt
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(messages=[{"role": "user", "content": prompt}],
                                            add_generation_prompt=True, bos_token="", eos_token="")


def hf_chat_text(tok, prompt: str) -> str:
    """A single user turn through a Hugging Face tokenizer's chat template."""
    return tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)


def hf_token_count(tok, text: str) -> int:
    return len(tok(text, add_special_tokens=False)["input_ids"])
