"""Shared driver for engines with their own batching (vLLM, TensorRT-LLM): real concurrent requests."""
from __future__ import annotations

import asyncio
import time
from typing import AsyncIterator, Callable

from probes.backends.base import Backend
from probes.result import ProbeSettings, RequestRecord


async def drive(prompts: list[str], settings: ProbeSettings,
                start: Callable[[int, str], AsyncIterator[int]], on_done: Callable[[int], None],
                prompt_tokens: Callable[[str], int | None]) -> list[RequestRecord]:
    """`start(i, prompt)` yields the number of new tokens each time the engine emits some."""
    sem = asyncio.Semaphore(max(1, settings.concurrency))
    done: list[RequestRecord] = []

    async def one(i: int, prompt: str) -> None:
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
            done.append(rec)
            on_done(len(done))

    await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))
    return sorted(done, key=lambda r: r.index)


class BatchingBackend(Backend):
    """An engine with its own scheduler: prompts go in chat-templated, up to `concurrency` in flight.

    Subclasses set `self.tok` (an HF tokenizer) and `self.loop` in load(), and provide new_tokens()
    and shutdown().
    """

    def new_tokens(self, text: str, settings: ProbeSettings) -> AsyncIterator[int]:
        raise NotImplementedError

    def shutdown(self) -> None:
        pass

    def run(self, prompts, settings, on_done):
        from probes.backends._chat import hf_chat_text, hf_token_count

        texts = [hf_chat_text(self.tok, p) for p in prompts]
        return self.loop.run_until_complete(drive(texts, settings, lambda i, t: self.new_tokens(t, settings),
                                                  on_done, lambda t: hf_token_count(self.tok, t)))

    def close(self) -> None:
        try:
            self.shutdown()
        except Exception:  # the child exits next; a failed shutdown must not lose the measured result
            pass
