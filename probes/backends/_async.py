"""Shared driver for engines with their own batching (vLLM, TensorRT-LLM): real concurrent requests."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from probes.backends.base import FINISHED, Backend, prompts_of
from probes.result import ProbeSettings, RequestRecord


async def drive(prompts: list[Any], settings: ProbeSettings,
                start: Callable[[int, Any], AsyncIterator[int]], on_done: Callable[[int], None],
                prompt_tokens: Callable[[Any], int | None]) -> list[RequestRecord]:
    """`start(i, prompt)` yields the number of new tokens each time the engine emits some."""
    sem = asyncio.Semaphore(max(1, settings.concurrency))
    done: list[RequestRecord] = []
    FINISHED.clear()

    async def one(i: int, prompt: Any) -> None:
        async with sem:
            rec = RequestRecord(index=i, prompt_tokens=prompt_tokens(prompt), submitted_s=time.perf_counter())
            try:
                async for n_new in start(i, prompt):
                    now = time.perf_counter()
                    if n_new and rec.first_token_s is None:
                        rec.first_token_s = now
                    rec.token_times_s.extend([now] * n_new)
                rec.output_tokens = len(rec.token_times_s)
                if not rec.token_times_s:
                    rec.error = "the engine returned no tokens"
            except Exception as err:
                rec.error = f"{type(err).__name__}: {err}"
            rec.finished_s = time.perf_counter()
            if rec.error is not None:  # the validator that derives status ran at construction, before this
                rec.status = "error"
            done.append(rec)
            FINISHED.append(rec)
            on_done(len(done))

    await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))
    return sorted(done, key=lambda r: r.index)


class BatchingBackend(Backend):
    """An engine with its own scheduler: prompts go in as the token ids of their chat-templated text (so the
    engine prefills exactly the counted tokens: no second BOS from its own tokenizer), up to `concurrency` in
    flight.

    Subclasses set `self.tok` (an HF tokenizer) and `self.loop` in load(), and provide new_tokens()
    and shutdown().
    """

    def new_tokens(self, ids: list[int], max_tokens: int, settings: ProbeSettings) -> AsyncIterator[int]:
        raise NotImplementedError

    def shutdown(self) -> None:
        pass

    def prompt_ids(self, text: str) -> list[int]:
        from probes.backends._chat import hf_chat_text

        return list(self.tok(hf_chat_text(self.tok, text), add_special_tokens=False)["input_ids"])

    def count_prompt_tokens(self, text: str) -> int:
        return len(self.prompt_ids(text))

    def run(self, prompts, settings, on_done):
        items = [(self.prompt_ids(p.text), p.max_tokens) for p in prompts_of(prompts, settings)]
        return self.loop.run_until_complete(drive(items, settings, lambda i, it: self.new_tokens(*it, settings),
                                                  on_done, lambda it: len(it[0])))

    def close(self) -> None:
        try:
            self.shutdown()
        except Exception:  # the child exits next; a failed shutdown must not lose the measured result
            pass


def model_max_len(model) -> int | None:
    """The model's own position limit from its config.json (vLLM refuses a max_model_len beyond it)."""
    import json

    try:
        cfg = json.loads((Path(model) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    v = cfg.get("max_position_embeddings") if isinstance(cfg, dict) else None
    return v if isinstance(v, int) and v > 0 else None
