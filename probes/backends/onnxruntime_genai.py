"""ONNX Runtime through onnxruntime-genai's generation loop on a builder export."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from probes.backends.base import Backend
from probes.result import ProbeSettings


class OnnxRuntimeBackend(Backend):
    id = "onnxruntime"
    import_name = "onnxruntime_genai"
    distributions = ("onnxruntime-genai", "onnxruntime-genai-cuda")
    install_hint = "pip install onnxruntime onnxruntime-genai  # NVIDIA: onnxruntime-gpu, never beside onnxruntime"
    requires = (("onnxruntime", "onnxruntime"), ("onnxruntime_genai", "onnxruntime-genai"))
    formats = ("onnx",)
    gguf_via_hf = True

    @classmethod
    def version(cls) -> str | None:
        import importlib.metadata as md

        parts = []
        for d in ("onnxruntime", "onnxruntime-gpu", "onnxruntime-genai"):
            try:
                parts.append(f"{d} {md.version(d)}")
            except md.PackageNotFoundError:
                pass
        return ", ".join(parts) or None

    @staticmethod
    def cuda(settings: ProbeSettings) -> bool:
        """The CUDA execution provider when onnxruntime-genai's CUDA build is installed and a GPU answers."""
        if settings.extra.get("device", "auto") == "cpu":
            return False
        try:
            import onnxruntime_genai as og

            return bool(og.is_cuda_available())
        except Exception:
            return False

    def estimate_memory_mb(self, model: Path, fmt: str, settings: ProbeSettings) -> float:
        from probes.workload import context_needed

        base = super().estimate_memory_mb(model, fmt, settings)
        if self.cuda(settings):
            return base  # the KV cache lives on the GPU
        # one generator at a time, its KV buffer (fp32 on the CPU) sized to its prompt + output
        n = context_needed(settings) or 2048
        kv = self.kv_cache_mb(model, n, 4)
        self.memory_detail = f"weights and runtime {base:,.0f} MB + KV cache of {n:,} tokens {kv:,.0f} MB" \
            if kv else None
        return base + kv

    def prepare(self, model: Path, fmt: str, settings: ProbeSettings, progress) -> tuple[Path, str]:
        from probes.models import hf_to_onnx

        precision = settings.extra.get("onnx_precision", "int4")
        model, fmt = self._gguf_to_hf(model, fmt, progress)
        self._rebuild = self._progress = None
        if fmt == "hf":  # exported for the provider it will run on (the builder's graphs differ per provider)
            hf, ep = model, "cuda" if self.cuda(settings) else "cpu"
            model, fmt = hf_to_onnx(hf, precision, progress, ep=ep), "onnx"
            # our export: one that fails to load is exported again, once (load_converted)
            self._rebuild, self._progress = (lambda: hf_to_onnx(hf, precision, progress, ep=ep)), progress
        return model, fmt

    def load(self, model: Path, fmt: str, settings: ProbeSettings) -> None:
        import onnxruntime_genai as og

        from probes.backends._chat import chat_template
        from probes.models import load_converted

        def open_model():
            cfg = json.loads((model / "genai_config.json").read_text())
            provider = cfg.get("model", {}).get("decoder", {}).get("session_options", {}).get("provider_options", [])
            names = [next(iter(p)) for p in provider if isinstance(p, dict) and p] or ["cpu"]
            if self.cuda(settings):
                config = og.Config(str(model))
                config.clear_providers()
                config.append_provider("cuda")
                names = ["cuda"]
                m = og.Model(config)
            else:
                m = og.Model(str(model))
            return cfg, names, m, og.Tokenizer(m)

        cfg, names, self.model, self.tok = load_converted(model, open_model, getattr(self, "_rebuild", None),
                                                          getattr(self, "_progress", None))
        self.template = chat_template(model)
        if "cuda" in names:
            from probes.gpu import cuda_device

            self.device = cuda_device(0)
        else:
            self.device = "/".join(names)
        ctx = cfg.get("model", {}).get("context_length") or cfg.get("search", {}).get("max_length")
        self.context_tokens = int(ctx) if isinstance(ctx, int) and ctx > 0 else None
        self.output_rule = ("min_length = max_length = prompt + the request's output length (onnxruntime-genai "
                            "masks the end-of-sequence token until min_length)")
        eos = cfg.get("model", {}).get("eos_token_id")
        self.eos = eos if isinstance(eos, list) else [eos] if eos is not None else []
        self.backend_settings = {"execution_provider": names, "model_dir": str(model),
                                 "precision": settings.extra.get("onnx_precision", "int4"),
                                 "loop": "onnxruntime-genai Generator, greedy"}
        self.og = og

    def count_prompt_tokens(self, text: str) -> int:
        from probes.backends._chat import render

        return len(self.tok.encode(render(self.template, text)))

    def stream(self, prompt: str, settings: ProbeSettings, max_tokens: int | None = None
               ) -> Iterator[tuple[str, Any]]:
        from probes.backends._chat import render

        want = max_tokens or settings.max_tokens
        tokens = self.tok.encode(render(self.template, prompt))
        n_prompt = len(tokens)
        yield "prompt_tokens", n_prompt
        params = self.og.GeneratorParams(self.model)
        total = n_prompt + want
        params.set_search_options(max_length=total, min_length=total, do_sample=False)
        gen = self.og.Generator(self.model, params)
        gen.append_tokens(tokens)
        n = 0
        while not gen.is_done() and n < want:
            gen.generate_next_token()
            yield "token", int(gen.get_next_tokens()[0])
            n += 1
        del gen
