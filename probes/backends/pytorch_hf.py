"""PyTorch + Hugging Face transformers, the baseline: a manual KV-cache loop so every token is timed."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

from probes.backends.base import Backend
from probes.result import ProbeSettings


class PyTorchBackend(Backend):
    id = "pytorch"
    import_name = "transformers"
    distributions = ("transformers",)
    install_hint = "pip install torch transformers accelerate  # CPU: pip install torch==2.13.0 (the CPU build)"
    requires = (("torch", "torch"), ("transformers", "transformers"))
    formats = ("hf",)
    gguf_via_hf = True

    def prepare(self, model: Path, fmt: str, settings: ProbeSettings, progress) -> tuple[Path, str]:
        from probes.models import gguf_to_hf

        src, src_fmt = model, fmt
        model, fmt = super().prepare(model, fmt, settings, progress)
        # our conversion of a GGUF: one that fails to load is converted again, once (load_converted)
        self._rebuild = (lambda: gguf_to_hf(src, progress)) if src_fmt == "gguf" else None
        self._progress = progress
        return model, fmt

    def estimate_memory_mb(self, model: Path, fmt: str, settings: ProbeSettings) -> float:
        import torch

        from probes.models import file_size_mb
        from probes.workload import context_needed

        weights = file_size_mb(model) * 1.6 + 400  # weights + torch runtime + activations
        if torch.cuda.is_available() and settings.extra.get("device", "auto") != "cpu":
            return weights  # the KV cache grows on the GPU
        # one request at a time: the KV cache (fp32 on the CPU) of the longest prompt + output
        n = context_needed(settings) or 2048
        kv = self.kv_cache_mb(model, n, 4)
        self.memory_detail = f"weights and runtime {weights:,.0f} MB + KV cache of {n:,} tokens {kv:,.0f} MB" \
            if kv else None
        return weights + kv

    def load(self, model: Path, fmt: str, settings: ProbeSettings) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        cuda = torch.cuda.is_available() and settings.extra.get("device", "auto") != "cpu"
        threads = settings.threads or len(os.sched_getaffinity(0))
        torch.set_num_threads(threads)
        # bf16 where the GPU has it (compute capability 8.0+), else fp16; fp32 on the CPU
        dtype = (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16) if cuda else torch.float32
        from probes.models import load_converted

        self.tok, self.model = load_converted(
            model, lambda: (AutoTokenizer.from_pretrained(model, trust_remote_code=False),
                            AutoModelForCausalLM.from_pretrained(model, dtype=dtype, trust_remote_code=False)),
            getattr(self, "_rebuild", None), getattr(self, "_progress", None))
        self.device = f"cuda:0 {torch.cuda.get_device_name(0)}" if cuda else "cpu"
        self.dev = torch.device("cuda:0" if cuda else "cpu")
        self.model.to(self.dev).eval()
        eos = self.model.generation_config.eos_token_id
        self.eos = [eos] if isinstance(eos, int) else list(eos or [])
        ctx = getattr(self.model.config, "max_position_embeddings", None)
        self.context_tokens = int(ctx) if isinstance(ctx, int) and ctx > 0 else None
        self.output_rule = "the end-of-sequence token(s) get logit -inf at every step of the greedy loop"
        self.backend_settings = {"torch": torch.__version__, "dtype": str(dtype).replace("torch.", ""),
                                 "threads": threads, "device": str(self.dev),
                                 "loop": "manual KV-cache greedy loop (one forward per token)"}

    def count_prompt_tokens(self, text: str) -> int:
        from probes.backends._chat import hf_chat_text, hf_token_count

        return hf_token_count(self.tok, hf_chat_text(self.tok, text))

    def stream(self, prompt: str, settings: ProbeSettings, max_tokens: int | None = None
               ) -> Iterator[tuple[str, Any]]:
        import torch

        from probes.backends._chat import hf_chat_text

        want = max_tokens or settings.max_tokens
        ids = self.tok(hf_chat_text(self.tok, prompt), return_tensors="pt", add_special_tokens=False)["input_ids"].to(self.dev)
        yield "prompt_tokens", int(ids.shape[1])
        with torch.inference_mode():
            out = self.model(input_ids=ids, use_cache=True, logits_to_keep=1)  # as generate() does
            for i in range(want):
                logits = out.logits[:, -1, :]
                if self.eos:
                    logits[:, self.eos] = float("-inf")
                nxt = logits.argmax(-1, keepdim=True)
                yield "token", int(nxt[0, 0])  # int() waits for the device
                if i + 1 == want:
                    break
                out = self.model(input_ids=nxt, past_key_values=out.past_key_values, use_cache=True)

    def close(self) -> None:
        try:
            import torch

            if torch.cuda.is_available():
                self.backend_settings["cuda_max_memory_allocated_mb"] = round(
                    torch.cuda.max_memory_allocated() / 2**20, 1)
        except Exception:
            pass
