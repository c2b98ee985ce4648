"""Which catalogue model a typed name means (knowledge/models.yaml): ids, names, aliases, Hugging Face repo names with
their tags and Ollama tags. Here, below the inputs, so an answers file's model block can read what the catalogue says
of the model it names (its checkpoint's precision) as the planner does."""
from __future__ import annotations

import re

from advisor.knowledge.load import Knowledge

_NAMES: dict[int, dict] = {}
# what people append to a model's name that does not change its shape: chat/instruct tunes, the hub's format and
# quantization tags (the precision they name is read by advisor.inputs.answers.name_hints)
_DECORATION = re.compile(r"^(instruct|chat|it|hf|base|pt|gguf|awq|gptq|int4|int8|w4a16|w8a8|w8a16|fp8|fp16|bf16|fp4|"
                         r"nvfp4|mxfp4|dynamic|bnb|4bit|8bit|mlx|exl2|quantized|safetensors|onnx|"
                         r"q\d[\w-]*|iq\d\w*|k|m|s|l|xs|0|1)$")
# a tag after a dot ("-quantized.w4a16", a file's ".gguf"): a dot before a letter, never a version's "3.1"
_DOTTED = re.compile(r"\.(?=[a-z])")
_VERSION = re.compile(r"^v\d+(\.\d+)*$")
_SIZE = re.compile(r"^(\d+(\.\d+)?[bm]|\d+x\d+(\.\d+)?b|e\d+b|a\d+(\.\d+)?b)$")


def _norm(s: str) -> str:
    return re.sub(r"-{2,}", "-", re.sub(r"[\s_]+", "-", s.strip().lower())).strip("-")


def _names(knowledge: Knowledge) -> dict:
    """Every catalogue id, name and alias, normalised (and without an org), -> its entry."""
    key = id(knowledge.models)
    if key not in _NAMES:
        table: dict = {}
        for m in knowledge.models.models:
            for x in (m.id, m.name, *m.aliases):
                table.setdefault(_norm(x), m)
                table.setdefault(_norm(x).rsplit("/", 1)[-1], m)
        _NAMES[key] = table
    return _NAMES[key]


def name_forms(name: str) -> list[str]:
    """The forms a typed name is looked up under, surest first: as typed; without its org; an Ollama `family:tag`
    as family-size; then without the tags that do not change the model's shape (-Instruct, -AWQ, -GPTQ-Int4, -FP8,
    -GGUF, :q4_K_M, -quantized.w4a16, a file's -Q4_K_M.gguf ...); and last without a version suffix (-v0.1).
    `llama3.1` is also tried as `llama-3.1`."""
    s = _norm(name[:300])
    tail = s.rsplit("/", 1)[-1]
    base, _, tag = tail.partition(":")
    forms = [s, tail]
    if tag:
        size = next((t for t in tag.split("-") if _SIZE.match(t)), None)
        forms += [f"{base}-{size}" if size else base]
        tail = forms[-1]
    words = _DOTTED.sub("-", tail).split("-")
    plain = [w for w in words if not _DECORATION.match(w)]
    forms.append("-".join(plain))
    forms.append("-".join(w for w in plain if not _VERSION.match(w)))
    forms += [f[len("meta-"):] for f in forms if f.startswith("meta-")]
    forms += [re.sub(r"^([a-z]+)(\d)", r"\1-\2", f) for f in forms]
    return list(dict.fromkeys(f for f in forms if f))


def find_known(name: str, knowledge: Knowledge):
    """The catalogue entry a name means, as people type it: an id, a name or alias, a Hugging Face repo name with or
    without its org and with its tags, or an Ollama tag (name_forms). None when no form matches exactly: a close
    match is offered as a suggestion, never assumed."""
    table = _names(knowledge)
    return next((table[form] for form in name_forms(name) if form in table), None)


__all__ = ["find_known", "name_forms"]
