"""TensorRT-LLM through its LLM API (in-flight batching). Needs an NVIDIA GPU and NVIDIA's wheels."""
from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

from probes.backends._async import BatchingBackend, model_max_len
from probes.result import ProbeSettings


class TensorRTLLMBackend(BatchingBackend):
    id = "tensorrt-llm"
    import_name = "tensorrt_llm"
    distributions = ("tensorrt-llm", "tensorrt_llm")
    install_hint = ("pip install --extra-index-url https://pypi.nvidia.com tensorrt-llm  "
                    "# Linux + NVIDIA GPU only; PyPI itself carries only a stub that downloads from NVIDIA")
    formats = ("hf",)
    gguf_via_hf = True

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

    def estimate_memory_mb(self, model: Path, fmt: str, settings: ProbeSettings) -> float:
        from probes.models import file_size_mb

        return file_size_mb(model) + 2000  # host memory; weights and KV live on the GPU

    def load(self, model: Path, fmt: str, settings: ProbeSettings) -> None:
        from tensorrt_llm import LLM
        from transformers import AutoTokenizer

        self.llm = LLM(model=str(model), trust_remote_code=False)
        self.tok = AutoTokenizer.from_pretrained(model, trust_remote_code=False)
        self.loop = asyncio.new_event_loop()
        self.context_tokens = model_max_len(model)
        self.output_rule = "SamplingParams(ignore_eos=True, max_tokens=the request's output length)"
        from probes.gpu import cuda_device

        self.device = cuda_device(0)
        self.backend_settings = {"api": "tensorrt_llm.LLM (PyTorch backend)", "max_batch": settings.concurrency}
        self.serving_mode = "in-process-batching"
        self.serving = f"in-flight batching by TensorRT-LLM's executor ({settings.concurrency} concurrent requests)"

    async def new_tokens(self, ids, max_tokens, settings):
        from tensorrt_llm import SamplingParams

        sp = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
        seen = 0
        async for out in self.llm.generate_async(ids, sampling_params=sp, streaming=True):  # token ids
            n = len(out.outputs[0].token_ids)  # cumulative
            yield n - seen
            seen = n

    def shutdown(self) -> None:
        self.llm.shutdown()
