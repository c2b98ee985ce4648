"""TensorRT-LLM through its LLM API (in-flight batching). Needs an NVIDIA GPU and NVIDIA's wheels."""
from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

from probes.backends.base import Backend
from probes.result import ProbeSettings


class TensorRTLLMBackend(Backend):
    id = "tensorrt-llm"
    import_name = "tensorrt_llm"
    distributions = ("tensorrt-llm", "tensorrt_llm")
    install_hint = ("pip install --extra-index-url https://pypi.nvidia.com tensorrt-llm  "
                    "# Linux + NVIDIA GPU only; PyPI itself carries only a stub that downloads from NVIDIA")
    formats = ("hf", "gguf")

    @classmethod
    def availability(cls) -> str | None:
        if importlib.util.find_spec("tensorrt_llm") is None:
            return ("tensorrt_llm is not installed: TensorRT-LLM has no binary wheel on PyPI (the PyPI package "
                    "is a stub that downloads from NVIDIA's index) and it needs an NVIDIA GPU on Linux")
        try:
            import pynvml

            pynvml.nvmlInit()
            n = pynvml.nvmlDeviceGetCount()
            pynvml.nvmlShutdown()
        except Exception as err:
            return f"TensorRT-LLM needs an NVIDIA GPU and none was found (NVML: {err})"
        if n == 0:
            return "TensorRT-LLM needs an NVIDIA GPU and NVML reports none"
        return None

    def prepare(self, model: Path, fmt: str, settings: ProbeSettings, progress) -> tuple[Path, str]:
        if fmt == "gguf":
            from probes.models import gguf_to_hf

            return gguf_to_hf(model, progress), "hf"
        return super().prepare(model, fmt, settings, progress)

    def estimate_memory_mb(self, model: Path, fmt: str, settings: ProbeSettings) -> float:
        from probes.models import file_size_mb

        return file_size_mb(model) + 2000  # host memory; weights and KV live on the GPU

    def load(self, model: Path, fmt: str, settings: ProbeSettings) -> None:
        from tensorrt_llm import LLM
        from transformers import AutoTokenizer

        self.llm = LLM(model=str(model), trust_remote_code=False)
        self.tok = AutoTokenizer.from_pretrained(model, trust_remote_code=False)
        self.loop = asyncio.new_event_loop()
        self.device = "cuda"
        self.backend_settings = {"api": "tensorrt_llm.LLM (PyTorch backend)", "max_batch": settings.concurrency}
        self.serving = f"in-flight batching by TensorRT-LLM's executor ({settings.concurrency} concurrent requests)"

    def _text(self, prompt: str) -> str:
        return self.tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                            add_generation_prompt=True)

    def run(self, prompts, settings, on_done):
        from tensorrt_llm import SamplingParams

        from probes.backends._async import drive

        sp = SamplingParams(max_tokens=settings.max_tokens, temperature=0.0, ignore_eos=True)

        async def start(i, prompt):
            seen = 0
            async for out in self.llm.generate_async(self._text(prompt), sampling_params=sp, streaming=True):
                n = len(out.outputs[0].token_ids)
                yield n - seen
                seen = n

        def n_prompt(prompt):
            return len(self.tok(self._text(prompt), add_special_tokens=False)["input_ids"])

        return self.loop.run_until_complete(drive(prompts, settings, start, on_done, n_prompt))

    def close(self) -> None:
        try:
            self.llm.shutdown()
        except Exception:
            pass
