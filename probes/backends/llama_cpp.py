"""llama.cpp through llama-cpp-python, in-process: one sequence at a time."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

from probes.backends.base import Backend
from probes.result import ProbeSettings


_BACKENDS = ("CUDA", "HIP", "Metal", "Vulkan", "SYCL")


def _system_info(llama_cpp) -> str:
    try:
        info = llama_cpp.llama_print_system_info()
        return info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)
    except Exception:
        return ""


def gpu_settings(supports_offload: bool, system_info: str, extra: dict) -> dict:
    """Every layer on the GPU (n_gpu_layers=-1) when the build can offload, unless the probe asks for the CPU;
    the build's backend is read from llama.cpp's own system info ("CUDA : ARCHS = 900 | …")."""
    backend = next((b for b in _BACKENDS if f"{b.upper()} :" in system_info.upper()), "CPU")
    wanted = extra.get("device", "auto") != "cpu"
    n = int(extra.get("n_gpu_layers", -1)) if supports_offload and wanted else 0
    return {"n_gpu_layers": n, "gpu_offload_supported": supports_offload, "build_backend": backend}


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

        import llama_cpp

        from probes.workload import context_needed

        threads = settings.threads or len(os.sched_getaffinity(0))
        # the workload's longest prompt + output, rounded up to 256, when it needs more than the default 2048
        need = context_needed(settings) or 0
        n_ctx = int(settings.extra.get("n_ctx") or max(2048, -(-need // 256) * 256))
        n_batch = int(settings.extra.get("n_batch", 512))
        gpu = gpu_settings(bool(llama_cpp.llama_supports_gpu_offload()), _system_info(llama_cpp), settings.extra)
        self.llm = Llama(model_path=str(model), n_ctx=n_ctx, n_threads=threads, n_batch=n_batch, verbose=False,
                         n_gpu_layers=gpu["n_gpu_layers"])
        meta = self.llm.metadata
        arch = meta.get("general.architecture", "")
        layers = int(meta.get(f"{arch}.block_count", 0) or 0)
        offloaded = (layers + 1 if gpu["n_gpu_layers"] < 0 else min(gpu["n_gpu_layers"], layers + 1)) if layers else None
        self.backend_settings = {"n_threads": threads, "n_ctx": n_ctx, "n_batch": n_batch, **gpu,
                                 "layers_offloaded": offloaded if gpu["n_gpu_layers"] else 0,
                                 "sampling": "greedy (top_k=1)"}
        if gpu["n_gpu_layers"]:
            from probes.gpu import cuda_device

            self.device = cuda_device(0) if gpu["build_backend"] in ("CUDA", "HIP") else \
                f"{gpu['build_backend'].lower()}:0"
        else:
            self.device = "cpu"
            if not gpu["gpu_offload_supported"]:
                self.notes.append("this llama-cpp-python build has no GPU backend (CPU only); rebuild it with "
                                  "CMAKE_ARGS=-DGGML_CUDA=on pip install --force-reinstall --no-cache-dir "
                                  "llama-cpp-python to offload to an NVIDIA GPU")
        n_train = int(self.llm._model.n_ctx_train() or 0)
        self.context_tokens = min(self.llm.n_ctx(), n_train) if n_train > 0 else self.llm.n_ctx()
        if n_train and n_ctx > n_train:
            self.notes.append(f"n_ctx {n_ctx} is beyond the model's trained context ({n_train}); requests are "
                              f"limited to {n_train} tokens")
        self.output_rule = ("a logits processor bans the end-of-sequence token (logit -inf) at every step; "
                            "generation stops at the request's output length")
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

    def count_prompt_tokens(self, text: str) -> int:
        return len(self._tokens(text))

    def stream(self, prompt: str, settings: ProbeSettings, max_tokens: int | None = None
               ) -> Iterator[tuple[str, Any]]:
        import numpy as np

        want = max_tokens or settings.max_tokens

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
            if n >= want:
                break
