"""The probe's workload: which prompts go to the engine, how long each is, and how many tokens come back.

Two ways to describe it:

- the legacy prompt mix (`prompt_mix` short / long / mixed, `max_tokens` out): a fixed, seeded synthetic
  prompt set with no token counts (`build_prompts`);
- the user's workload in tokens: `input_tokens` (optionally spread as mean:stddev), `output_tokens`, a named
  `preset` (PRESETS), or the user's own prompts from a JSONL file (`prompts_file`).

With `input_tokens`, every prompt is synthetic text fitted in the engine's own tokenizer so that, after the
engine applies its chat template, it is `input_tokens` tokens long (±1; see `fit_prompt`). Every prompt opens
differently ("Request 17 of run 1234: …"), so no prefix cache serves one request from another's prefill:
identical prompts hit prompt caches and make TTFT lie. Prompts are the same for every engine and every run
with the same seed, up to each engine's tokenizer.

The output length is exact on every backend: `output_tokens` (or, when it is None, `max_tokens`) tokens per
request, with the end-of-sequence token banned (each backend says how in its notes).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable

# ------------------------------------------------------------------------------------------ bounds
MIN_INPUT_TOKENS = 16  # the low clip of a spread
MAX_INPUT_TOKENS = 131_072
MAX_OUTPUT_TOKENS = 8_192
CONTEXT_MARGIN = 8  # tokens kept free between prompt + output and the model's context

# ------------------------------------------------------------------------------------------ presets
#: Named workloads: prompt tokens (mean and spread) and exact output tokens per request.
#: The means come from the use-case profiles that the AI on EKS project recommends for GuideLLM's synthetic
#: data ("Model Testing and Evaluation", github.com/awslabs/ai-on-eks, website/docs/blueprints/inference/ai/
#: llm/model-testing.md): Chat prompt_tokens=512,output_tokens=256; RAG 4096/512; Summarization 1024/256;
#: Code Generation 512/512. The spreads (stddev) are our choice: a quarter of the mean, an eighth for RAG,
#: whose prompts fill a fixed budget of retrieved chunks. Real chat traffic is far more varied and shorter
#: (LMSYS-Chat-1M, arXiv:2309.11998, reports 69.5 prompt / 214.5 response tokens on average per turn): a
#: preset is a starting point, the user's own numbers or prompts file are better.
PRESETS: dict[str, dict] = {
    "chat": {"input_tokens": 512, "input_tokens_sd": 128, "output_tokens": 256,
             "about": "an assistant conversation turn: a question with some context, a few paragraphs back"},
    "rag": {"input_tokens": 4096, "input_tokens_sd": 512, "output_tokens": 512,
            "about": "retrieval-augmented answers: retrieved passages plus a question, a focused answer"},
    "summarize": {"input_tokens": 1024, "input_tokens_sd": 256, "output_tokens": 256,
                  "about": "a document in, a summary out"},
    "code": {"input_tokens": 512, "input_tokens_sd": 128, "output_tokens": 512,
             "about": "code generation: an instruction with surrounding code, a longer block of code back"},
}

# ------------------------------------------------------------------------------------------ legacy prompt mix
_TOPICS = ["why the sky is blue", "how a bicycle stays upright", "what a hash table is", "how tides work",
           "why bread rises", "how vaccines train the immune system", "what inflation means",
           "how a compiler works", "why leaves change colour", "how GPS finds a position",
           "what photosynthesis does", "how a refrigerator cools", "why the moon has phases",
           "how noise-cancelling headphones work", "what a neural network learns", "how rainbows form"]
_FILLER = ("The following notes are background for the question. They describe the setting, the people "
           "involved, the constraints of the project, and the earlier attempts that did not work. ")


def build_prompts(n: int, mix: str = "mixed", seed: int = 1234) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        topic = _TOPICS[(i + rng.randrange(len(_TOPICS))) % len(_TOPICS)]
        long = mix == "long" or (mix == "mixed" and i % 3 == 2)
        if long:
            reps = 6 + rng.randrange(4)
            body = f"Request {i}. " + _FILLER * reps + f"Now explain in a few sentences {topic}."
        else:
            body = f"Request {i}. Explain in a few sentences {topic}."
        out.append(body)
    return out


def messages(prompt: str) -> list[dict]:
    return [{"role": "user", "content": prompt}]


# ------------------------------------------------------------------------------------------ one request
@dataclass(frozen=True)
class Prompt:
    """One request: its text (a single user turn, before the chat template), its exact output length, and the
    prompt length it was fitted to (None for free text: the legacy mix or the user's prompts file)."""

    text: str
    max_tokens: int
    target_tokens: int | None = None


def as_prompt(p: "Prompt | str", max_tokens: int) -> Prompt:
    return p if isinstance(p, Prompt) else Prompt(str(p), max_tokens)


def output_tokens(settings) -> int:
    """The exact output length per request: `output_tokens` wins over `max_tokens`."""
    return settings.output_tokens or settings.max_tokens


def uses_tokens(settings) -> bool:
    """Whether the workload is described in tokens (or by a prompts file) rather than by the legacy mix."""
    return bool(settings.input_tokens or settings.prompts_file or settings.output_tokens or settings.preset)


# ------------------------------------------------------------------------------------------ spread
def input_lengths(n: int, mean: int, sd: int | None, seed: int, upper: int = MAX_INPUT_TOKENS) -> list[int]:
    """`n` prompt lengths: all `mean`, or normal(mean, sd) seeded by `seed`, rounded and clipped to
    [MIN_INPUT_TOKENS, upper]. The same seed gives the same lengths on every machine."""
    if not sd:
        return [mean] * n
    rng = random.Random(f"probe-input-tokens:{seed}")  # its own stream: independent of the prompt text
    hi = max(MIN_INPUT_TOKENS, upper)
    return [min(hi, max(MIN_INPUT_TOKENS, round(rng.gauss(mean, sd)))) for _ in range(n)]


def planned_lengths(settings) -> list[int] | None:
    """The measured requests' prompt lengths before the model's context is known (None without input_tokens)."""
    if not settings.input_tokens:
        return None
    return input_lengths(settings.requests, settings.input_tokens, settings.input_tokens_sd, settings.seed,
                         MAX_INPUT_TOKENS - output_tokens(settings) - CONTEXT_MARGIN)


def context_needed(settings) -> int | None:
    """Tokens of context the run needs (longest prompt + longest output + margin), for backends that size their
    context (llama.cpp n_ctx, vLLM max_model_len) before loading; None when the legacy mix fits the defaults.

    For a prompts file the prompt lengths are not known before a tokenizer is loaded: half a token per byte
    is assumed, which over-counts ordinary text (about 4 characters per token in English)."""
    out = output_tokens(settings)
    lengths = planned_lengths(settings)
    if lengths:
        return max(lengths) + out + CONTEXT_MARGIN
    if settings.prompts_file:
        try:
            lines = read_prompts_file(settings.prompts_file)
        except (OSError, ValueError):
            return None
        return max(len(p.encode("utf-8")) // 2 + 16 + (m or out) for p, m in lines) + CONTEXT_MARGIN
    if settings.output_tokens:
        return 1024 + out + CONTEXT_MARGIN  # the legacy mix's prompts stay well under 1024 tokens
    return None


# ------------------------------------------------------------------------------------------ fitting
_FILLER_WORDS = (
    "The notes below are background for the question above. They describe the setting of the project, the "
    "people involved in it, the budget and the deadlines that constrain it, and the earlier attempts that did "
    "not work as planned. The first attempt used a single server in one region and ran out of memory during "
    "the busiest hour of the day. The second attempt split the traffic across three machines, which helped, "
    "but the queue in front of them grew whenever a long document arrived. A later review found that most "
    "requests were short questions, while a few carried whole reports, contracts or logs. The team then "
    "measured how long each step took, wrote the numbers in a shared table, and compared them week by week. "
    "Some weeks were calm and others were not; holidays, product launches and the end of each quarter all "
    "changed the pattern. Every change to the system was written down with its date, its reason and its "
    "effect, so that anyone could follow the history later and check the conclusions for themselves. "
).split()
_PAD_PIECES = (" a", " I", " 1", ".", ",", " x", " and")
MIN_OPENING_WORDS = 5  # "Request 17 of run 1234:" is never cut: it keeps the opening distinct


def opening(index: int, seed: int, kind: str = "Request") -> str:
    """A distinct first sentence per request (the request number and the run's seed come first)."""
    topic = _TOPICS[(index * 7 + seed) % len(_TOPICS)]
    return f"{kind} {index} of run {seed}: explain {topic}, using the notes below."


def _words(head: list[str], k: int) -> str:
    if k <= len(head):
        return " ".join(head[:k])
    n = len(_FILLER_WORDS)
    rest = [_FILLER_WORDS[j % n] for j in range(k - len(head))]
    return " ".join(head + rest)


@dataclass
class Fit:
    text: str
    tokens: int  # the count the tokenizer gave for `text` (after the chat template)
    words: int
    rate: float  # tokens per filler word, a hint for the next fit


def fit_prompt(count: Callable[[str], int], head: str, n_tokens: int, rate: float | None = None) -> Fit:
    """Text that opens with `head` and counts `n_tokens` by `count` (the engine's tokens after its chat
    template), ±1 where no whole-token padding lands exactly.

    A search on the number of filler words (interpolation, falling back to bisection: the count grows with the
    words) finds the longest text that is not over; whole tokens of padding (" a", " 1", "." …, each kept only
    if it adds exactly one token) close the gap a multi-token word leaves. Where even the shortest opening is
    over `n_tokens` (the chat template alone can be longer than a tiny target), that opening is returned and
    `tokens` says how long it is."""
    words = head.split()
    seen: dict[int, int] = {}

    def c(k: int) -> int:
        if k not in seen:
            seen[k] = count(_words(words, k))
        return seen[k]

    kmin = min(MIN_OPENING_WORDS, len(words))
    if c(kmin) >= n_tokens:
        return Fit(_words(words, kmin), c(kmin), kmin, rate or 1.3)
    lo, hi = kmin, None
    guess = rate or 1.3
    k = kmin + max(1, round((n_tokens - c(kmin)) / guess))
    bisect = False
    for _ in range(200):
        v = c(k)
        if v == n_tokens:
            lo = k
            break
        if v < n_tokens:
            lo = max(lo, k)
        else:
            hi = k if hi is None else min(hi, k)
        if hi is not None and hi - lo <= 1:
            break
        if hi is None:  # no upper bound yet: extrapolate from the rate seen so far, with some overshoot
            per = max(0.05, (c(lo) - c(kmin)) / (lo - kmin)) if lo > kmin else guess
            k = lo + max(1, math.ceil((n_tokens - c(lo)) / per * 1.02))
        elif bisect:
            k = (lo + hi) // 2
        else:  # interpolate between the bracket's ends
            k = lo + round((n_tokens - c(lo)) * (hi - lo) / max(1, c(hi) - c(lo)))
            k = min(hi - 1, max(lo + 1, k))
        bisect = not bisect
    text, got = _words(words, lo), c(lo)
    tries = 0
    while got < n_tokens and tries < 4 * (n_tokens - got) + len(_PAD_PIECES):
        for piece in _PAD_PIECES:
            tries += 1
            v = count(text + piece)
            if v == got + 1:
                text, got = text + piece, v
                break
        else:
            break
    per = (c(lo) - c(kmin)) / (lo - kmin) if lo > kmin else (rate or 1.3)
    return Fit(text, got, lo, per)


def fitted_prompts(count: Callable[[str], int], lengths: list[int], out_tokens: int, seed: int,
                   kind: str = "Request") -> tuple[list[Prompt], list[int]]:
    """One fitted prompt per length, each with its own opening; and the count each one got."""
    prompts, got, rate = [], [], None
    for i, n in enumerate(lengths):
        f = fit_prompt(count, opening(i, seed, kind), n, rate)
        rate = f.rate
        prompts.append(Prompt(f.text, out_tokens, n))
        got.append(f.tokens)
    return prompts, got


# ------------------------------------------------------------------------------------------ prompts file
# The one home of the prompts file's parsing: the settings check (probes.validation) and the run both read it here.
MAX_PROMPTS_BYTES = 8 * 2**20
MAX_PROMPTS_LINES = 10_000
MAX_PROMPT_CHARS = 200_000
PROMPT_KEYS = ("prompt", "max_tokens")


class PromptsFileError(ValueError):
    """A prompts file that cannot be used; str() is one line naming the line number where there is one."""


class PromptLine(tuple):
    """(prompt, max_tokens or None), as a plain pair unpacks, that also knows its line in the file (`.line`), so a
    prompt refused later (too long for the model's context) is named by where the user can find it."""

    def __new__(cls, prompt: str, max_tokens: int | None, line: int = 0) -> "PromptLine":
        self = super().__new__(cls, (prompt, max_tokens))
        self.line = line
        return self


def read_prompts_bytes(path: str) -> bytes:
    """The file's bytes, refused (PromptsFileError) before reading when it is not a file or over the size cap."""
    import os

    shown = path if len(path) <= 80 else "…" + path[-79:]
    try:
        st = os.stat(path)
    except OSError as err:
        raise PromptsFileError(f"prompts file {shown!r}: {err.strerror or err}") from None
    import stat

    if not stat.S_ISREG(st.st_mode):
        raise PromptsFileError(f"prompts file {shown!r}: not a regular file")
    if st.st_size > MAX_PROMPTS_BYTES:
        raise PromptsFileError(f"prompts file {shown!r}: {st.st_size:,} bytes, over the {MAX_PROMPTS_BYTES // 2**20} "
                               "MiB limit")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PROMPTS_BYTES + 1)
    except OSError as err:
        raise PromptsFileError(f"prompts file {shown!r}: {err.strerror or err}") from None
    if len(data) > MAX_PROMPTS_BYTES:
        raise PromptsFileError(f"prompts file {shown!r}: over the {MAX_PROMPTS_BYTES // 2**20} MiB limit")
    return data


def parse_prompts_jsonl(data: bytes) -> list[tuple[str, int | None]]:
    """One `{"prompt": "...", "max_tokens": N}` per line (max_tokens optional) → [(prompt, max_tokens or None)].

    Blank lines are skipped; anything else wrong raises PromptsFileError naming the line."""
    import json

    if len(data) > MAX_PROMPTS_BYTES:
        raise PromptsFileError(f"prompts file: over the {MAX_PROMPTS_BYTES // 2**20} MiB limit")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a UTF-8 byte-order mark
    lines = data.split(b"\n")
    if len(lines) > MAX_PROMPTS_LINES + 1 or (len(lines) == MAX_PROMPTS_LINES + 1 and lines[-1].strip()):
        raise PromptsFileError(f"prompts file: more than {MAX_PROMPTS_LINES:,} lines")
    out: list[tuple[str, int | None]] = []
    for no, raw in enumerate(lines, 1):
        where = f"prompts file line {no}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise PromptsFileError(f"{where}: not UTF-8 (byte {err.start + 1})") from None
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_constant=_no_constant)
        except ValueError as err:
            raise PromptsFileError(f"{where}: not valid JSON ({str(err).split(':')[0]})") from None
        except RecursionError:  # [[[[… a hundred thousand deep: the decoder recurses per level
            raise PromptsFileError(f"{where}: nested too deeply (a prompt is one flat JSON object)") from None
        if not isinstance(obj, dict):
            raise PromptsFileError(f"{where}: expected a JSON object like {{\"prompt\": \"...\"}}, got "
                                   f"{type(obj).__name__ if obj is not None else 'null'}")
        unknown = [k for k in obj if k not in PROMPT_KEYS]
        if unknown:
            raise PromptsFileError(f"{where}: unknown key {unknown[0][:40]!r} (allowed: {', '.join(PROMPT_KEYS)})")
        prompt = obj.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise PromptsFileError(f"{where}: \"prompt\" must be a non-empty string")
        if len(prompt) > MAX_PROMPT_CHARS:
            raise PromptsFileError(f"{where}: the prompt has {len(prompt):,} characters, over the "
                                   f"{MAX_PROMPT_CHARS:,} limit")
        mt = obj.get("max_tokens")
        if "max_tokens" in obj and (isinstance(mt, bool) or not isinstance(mt, int)
                                    or not 1 <= mt <= MAX_OUTPUT_TOKENS):
            raise PromptsFileError(f"{where}: \"max_tokens\" must be a whole number between 1 and "
                                   f"{MAX_OUTPUT_TOKENS:,}, got {json.dumps(mt)[:40]}")
        out.append(PromptLine(prompt, mt, no))
    if not out:
        raise PromptsFileError("prompts file: no prompts (one JSON object per line)")
    return out


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def read_prompts_file(path: str) -> list[tuple[str, int | None]]:
    """(prompt, max_tokens or None) per line of a validated JSONL file; PromptsFileError (a ValueError) with one
    line if invalid."""
    return parse_prompts_jsonl(read_prompts_bytes(path))


def file_prompts(lines: list[tuple[str, int | None]], n: int, out_tokens: int) -> list[Prompt]:
    """`n` requests from the file's prompts in order, cycling when `n` is larger."""
    return [Prompt(lines[i % len(lines)][0], lines[i % len(lines)][1] or out_tokens) for i in range(n)]


def context_error(settings, context: int | None) -> str | None:
    """One line when the workload in tokens cannot fit `context` (the model's trained context): a fixed input length
    plus the output (+CONTEXT_MARGIN) over it, or the output alone leaving no room (a spread of input lengths is
    clipped to fit, as the run does). None when it fits, or when the context or the prompt lengths are not known."""
    if not context:
        return None
    out = output_tokens(settings)
    upper = context - out - CONTEXT_MARGIN
    what = f"the model's trained context of {context:,} tokens"
    if settings.input_tokens and (upper < (MIN_INPUT_TOKENS if settings.input_tokens_sd else 1)
                                  or (not settings.input_tokens_sd and settings.input_tokens > upper)):
        return (f"{settings.input_tokens:,} input + {out:,} output tokens (+{CONTEXT_MARGIN}) do not fit in {what}; "
                f"at most {max(0, upper):,} input tokens fit with this output")
    if upper < 1:
        return f"{out:,} output tokens (+{CONTEXT_MARGIN}) do not fit in {what}"
    return None


def prompts_over_context(lines: list, count: Callable[[str], int | None], context: int | None, out_tokens: int,
                         n_used: int | None = None) -> str | None:
    """One line naming the first prompt that cannot fit: its line in the file, its tokens (by `count`, the engine's
    own tokenizer after its chat template) and its output against `context`; None when every prompt fits (or none
    can be counted). Checked before the run: a prompt over the context would fail, or run to the timeout, only after
    the others were measured. `n_used`: the run sends only the first n_used lines (the rest are never counted)."""
    if not context:
        return None
    for i, (text, max_tokens) in enumerate(lines[:n_used] if n_used is not None else lines):
        n = count(text)
        if n is None:
            return None
        out = max_tokens or out_tokens
        if n + out + CONTEXT_MARGIN > context:
            where = f"prompts file line {getattr(lines[i], 'line', 0) or i + 1}"
            return (f"{where}: the prompt is {n:,} tokens after the chat template; with its {out:,} output tokens "
                    f"(+{CONTEXT_MARGIN}) it does not fit in the model's context of {context:,} tokens")
    return None


# ------------------------------------------------------------------------------------------ the model's context
# What a run's context costs, read from the model's own files before any engine loads it: the context it was trained
# for (no n_ctx beyond it is asked for) and the KV cache per token, 2 × layers × kv_heads × head_dim elements.
MAX_CONFIG_BYTES = 4 << 20
_SANE = 1 << 31


@dataclass(frozen=True)
class ModelShape:
    context_tokens: int | None  # the trained context (GGUF context_length, config max_position_embeddings)
    kv_elements_per_token: int | None  # K and V over every layer: 2 × layers × kv_heads × head_dim
    source: str = ""  # the file it was read from

    def kv_cache_mb(self, n_ctx: int, bytes_per_element: float) -> float | None:
        """The KV cache of n_ctx tokens, in MiB; None when the shape is not known."""
        if not self.kv_elements_per_token:
            return None
        return self.kv_elements_per_token * n_ctx * bytes_per_element / 2**20


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v < _SANE else None


def _kv_elements(layers, kv_heads, k_dim, v_dim) -> int | None:
    """K and V elements per token over all layers; kv_heads may be one count per layer (some GGUF architectures)."""
    if isinstance(kv_heads, list):
        counts = [_int(h) or 0 for h in kv_heads]
        total = sum(counts) if any(counts) else None
    else:
        total = _int(kv_heads) * _int(layers) if _int(kv_heads) and _int(layers) else None
    if not total or not _int(k_dim) or not _int(v_dim):
        return None
    return total * (k_dim + v_dim)


def model_shape(path) -> ModelShape | None:
    """The model's trained context and KV size per token from a GGUF header, an HF config.json or an ONNX
    genai_config.json; None when they cannot be read (the engine's own load then says what is wrong). Bounded:
    never reads more than a header or a few MiB of JSON, never raises."""
    from pathlib import Path

    p = Path(path)
    try:
        if p.is_file():
            return _gguf_shape(p)
        if p.is_dir():
            if (p / "genai_config.json").is_file() and any(p.glob("*.onnx")):
                return _onnx_shape(p / "genai_config.json")
            if (p / "config.json").is_file():
                return _hf_shape(p / "config.json")
            ggufs = sorted(p.glob("*.gguf"))
            if len(ggufs) == 1:
                return _gguf_shape(ggufs[0])
    except (OSError, ValueError, RecursionError, TypeError, KeyError, AttributeError, OverflowError):
        return None
    return None


def _json_object(path) -> dict:
    import json

    with open(path, "rb") as f:
        raw = f.read(MAX_CONFIG_BYTES + 1)
    if len(raw) > MAX_CONFIG_BYTES:
        raise ValueError("too large")
    data = json.loads(raw.decode("utf-8"))  # RecursionError for a deep one: model_shape answers None
    if not isinstance(data, dict):
        raise ValueError("not an object")
    return data


def _hf_shape(path) -> ModelShape:
    cfg = _json_object(path)
    if isinstance(cfg.get("text_config"), dict) and "num_hidden_layers" not in cfg:
        cfg = cfg["text_config"]  # a multimodal model: the language model's own
    ctx = _int(cfg.get("max_position_embeddings"))
    rope = cfg.get("rope_scaling") if isinstance(cfg.get("rope_scaling"), dict) else {}
    factor = rope.get("factor")
    if ctx and (rope.get("rope_type") or rope.get("type")) == "yarn" and isinstance(factor, (int, float)) \
            and 1 < factor <= 64:  # YaRN extends the trained context by its factor (as vLLM reads it)
        ctx = int((_int(rope.get("original_max_position_embeddings")) or ctx) * factor)
    heads = _int(cfg.get("num_attention_heads"))
    head_dim = _int(cfg.get("head_dim")) or (_int(cfg.get("hidden_size")) // heads if heads and
                                                _int(cfg.get("hidden_size")) else None)
    kv = _kv_elements(cfg.get("num_hidden_layers"), cfg.get("num_key_value_heads") or heads, head_dim, head_dim)
    return ModelShape(ctx, kv, str(path))


def _onnx_shape(path) -> ModelShape:
    cfg = _json_object(path)
    model = cfg.get("model") if isinstance(cfg.get("model"), dict) else {}
    dec = model.get("decoder") if isinstance(model.get("decoder"), dict) else {}
    head = _int(dec.get("head_size"))
    kv = _kv_elements(dec.get("num_hidden_layers"), dec.get("num_key_value_heads") or dec.get("num_attention_heads"),
                      head, head)
    return ModelShape(_int(model.get("context_length")), kv, str(path))


def _gguf_shape(path) -> ModelShape:
    from probes.gguf_meta import read_gguf  # the bounded header reader the planner uses too

    meta = read_gguf(path, budget_s=5.0)
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise ValueError("no architecture")
    g = lambda k: meta.get(f"{arch}.{k}")  # noqa: E731
    heads = g("attention.head_count")
    n_heads = max(list(heads), default=None) if isinstance(heads, list) else heads  # a per-layer list, maybe skipped
    k_dim = _int(g("attention.key_length")) or (_int(g("embedding_length")) // n_heads
                                                if _int(n_heads) and _int(g("embedding_length")) else None)
    kv_heads = g("attention.head_count_kv")
    kv = _kv_elements(g("block_count"), kv_heads if kv_heads is not None else heads, k_dim,
                      _int(g("attention.value_length")) or k_dim)
    return ModelShape(_int(g("context_length")), kv, str(path))
