"""llama.cpp through llama-cpp-python, in-process: one sequence at a time."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

from probes.backends.base import Backend
from probes.result import ProbeSettings


class LlamaCppBackend(Backend):
    id = "llama.cpp"
    import_name = "llama_cpp"
    distributions = ("llama-cpp-python",)
    install_hint = "pip install llama-cpp-python"
    formats = ("gguf",)

    def estimate_memory_mb(self, model: Path, fmt: str, settings: ProbeSettings) -> float:
        from probes.models import file_size_mb

        # weights (mmap) + KV for n_ctx + compute buffers; measured 208 MB peak for the 94 MB SmolLM2 file
        return file_size_mb(model) + 150

    def load(self, model: Path, fmt: str, settings: ProbeSettings) -> None:
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        threads = settings.threads or len(os.sched_getaffinity(0))
        n_ctx = int(settings.extra.get("n_ctx", 2048))
        n_batch = int(settings.extra.get("n_batch", 512))
        self.llm = Llama(model_path=str(model), n_ctx=n_ctx, n_threads=threads, n_batch=n_batch, verbose=False)
        self.backend_settings = {"n_threads": threads, "n_ctx": n_ctx, "n_batch": n_batch,
                                 "n_gpu_layers": 0, "sampling": "greedy (top_k=1)"}
        meta = self.llm.metadata
        template = meta.get("tokenizer.chat_template")
        self.eos = {self.llm.token_eos()}
        self.formatter = None
        if template:
            eos_id, bos_id = self.llm.token_eos(), self.llm.token_bos()
            self.formatter = Jinja2ChatFormatter(
                template, eos_token=self.llm._model.token_get_text(eos_id) if eos_id >= 0 else "",
                bos_token=self.llm._model.token_get_text(bos_id) if bos_id >= 0 else "")

    def _tokens(self, prompt: str) -> list[int]:
        if self.formatter is not None:
            text = self.formatter(messages=[{"role": "user", "content": prompt}]).prompt
            return self.llm.tokenize(text.encode(), add_bos=False, special=True)
        return self.llm.tokenize(prompt.encode(), add_bos=True)

    def stream(self, prompt: str, settings: ProbeSettings) -> Iterator[tuple[str, Any]]:
        import numpy as np

        tokens = self._tokens(prompt)
        yield "prompt_tokens", len(tokens)
        self.llm.reset()  # no prefix cache between requests: every TTFT includes its prefill
        eos = list(self.eos)

        def no_eos(_ids, logits):  # a fixed output length for every engine
            logits[eos] = -np.inf
            return logits

        n = 0
        for tok in self.llm.generate(tokens, top_k=1, temp=0.0, reset=True, logits_processor=[no_eos]):
            yield "token", tok
            n += 1
            if n >= settings.max_tokens:
                break
