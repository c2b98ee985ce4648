"""llama.cpp two ways: through llama-cpp-python in-process (one sequence at a time) at concurrency 1, and through
llama.cpp's own `llama-server` (parallel slots, continuous batching), the way llama.cpp serves, above 1.

llama-cpp-python's own server is not llama-server: it serves one request at a time and interrupts a running
stream when the next request arrives. `llama-server` is built by `make llama-cpp` (started in the background by
`make run`) in one CMake build with the shared libraries llama-cpp-python loads (probes/builds.py), from the
llama.cpp sources the pinned llama-cpp-python vendors, into the user cache dir, so both modes run the same llama.cpp. The server is started by the probe's child process (its process tree, so its memory is sampled
and it dies with the probe) on a free loopback port, and measured by the endpoint client (the same metrics).
"""
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


def llama_server_binary() -> Path | None:
    """Our build of llama-server for the installed llama-cpp-python (see the module docstring), or
    INFERENCE_ADVISOR_LLAMA_SERVER; None when neither exists. PATH is not searched: a llama-server of another
    llama.cpp version would be another engine than the in-process one."""
    env = os.environ.get("INFERENCE_ADVISOR_LLAMA_SERVER")
    if env:
        p = Path(env)
        return p if p.is_file() and os.access(p, os.X_OK) else None
    from probes.builds import LLAMA_VERSION, llama_dir

    if LlamaCppBackend.version() != LLAMA_VERSION:
        return None
    d = llama_dir()
    return d / "llama-server" if d is not None else None


def _nvidia_gpu_here() -> bool:
    """Only then is "rebuild for CUDA" advice (L5: every result on a GPU-less machine said so)."""
    import shutil

    return Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi") is not None


class LlamaCppBackend(Backend):
    id = "llama.cpp"
    import_name = "llama_cpp"
    distributions = ("llama-cpp-python",)
    install_hint = "pip install llama-cpp-python"
    formats = ("gguf",)

    @classmethod
    def availability(cls) -> str | None:
        """llama-cpp-python is installed without its libraries (built beside the app, probes/builds.py): it can run
        once the build has put libllama where it loads it; while the build runs, the reason says how far it is."""
        why = super().availability()
        if why:
            return why
        from probes.builds import link_into_package

        return link_into_package()

    def estimate_memory_mb(self, model: Path, fmt: str, settings: ProbeSettings) -> float:
        from probes.models import file_size_mb

        # weights (mmap) + KV for n_ctx + compute buffers: 208 MB peak for the 94 MB SmolLM2 file at n_ctx 2048
        weights = file_size_mb(model)
        per_slot, _ = self._n_ctx(model, settings)
        slots = settings.concurrency if self._serves(settings) else 1
        if self._serves(settings):
            on_gpu = int(settings.extra.get("n_gpu_layers", 0)) != 0 and settings.extra.get("device") != "cpu"
        else:
            import llama_cpp

            on_gpu = gpu_settings(bool(llama_cpp.llama_supports_gpu_offload()), _system_info(llama_cpp),
                                  settings.extra)["n_gpu_layers"] != 0
        # llama.cpp allocates the whole KV cache (f16) at load; offloaded, it lives on the GPU, not in this RAM
        kv = 0.0 if on_gpu else self.kv_cache_mb(model, per_slot * slots, 2)
        self.memory_detail = (f"weights {weights:,.0f} MB + KV cache of {per_slot * slots:,} tokens {kv:,.0f} MB"
                              if kv else None)
        return weights + kv + 150

    def _n_ctx(self, model: Path, settings: ProbeSettings) -> tuple[int, int | None]:
        """(the context per sequence or slot, the model's trained context or None): the workload's longest prompt +
        output rounded up to 256 (at least 2048) or extra n_ctx, never beyond the trained context (a longer n_ctx
        only allocates a KV cache no request may use)."""
        from probes.workload import context_needed, model_shape

        need = context_needed(settings) or 0
        n_ctx = int(settings.extra.get("n_ctx") or max(2048, -(-need // 256) * 256))
        shape = model_shape(model)
        trained = shape.context_tokens if shape else None
        return (min(n_ctx, trained) if trained else n_ctx), trained

    @staticmethod
    def _serves(settings: ProbeSettings) -> bool:
        """Whether load() measures through llama-server (concurrency above 1, and it is built)."""
        return settings.concurrency > 1 and settings.extra.get("serving", "auto") != "in-process" and \
            llama_server_binary() is not None

    server = None  # the llama-server process (probes.backends._server.ServerProcess), when measured through it
    ep = None  # the endpoint client that measures it

    def load(self, model: Path, fmt: str, settings: ProbeSettings) -> None:
        mode = settings.extra.get("serving", "auto")
        if settings.concurrency > 1 and mode != "in-process":
            binary = llama_server_binary()
            if binary is not None:
                return self._load_server(binary, model, settings)
            self.notes.append("llama-server is not built here (make llama-cpp), so these concurrent requests are "
                              "served one at a time in-process; llama.cpp deployed with llama-server batches them "
                              "in parallel slots, so this run understates llama.cpp at this concurrency")
        self._load_in_process(model, settings)

    def _load_server(self, binary: Path, model: Path, settings: ProbeSettings) -> None:
        from probes.backends._server import ServerProcess, free_port
        from probes.backends.endpoint import EndpointBackend

        threads = settings.threads or len(os.sched_getaffinity(0))
        slots = settings.concurrency
        per_slot, _ = self._n_ctx(model, settings)
        port = free_port()
        n_gpu = 0 if settings.extra.get("device") == "cpu" else int(settings.extra.get("n_gpu_layers", 0))
        cmd = [str(binary), "-m", str(model), "-c", str(per_slot * slots), "-np", str(slots), "-t", str(threads),
               "-b", str(int(settings.extra.get("n_batch", 512))), "-ngl", str(n_gpu), "--cont-batching",
               "--host", "127.0.0.1", "--port", str(port), "--no-webui"]
        self.server = ServerProcess("llama-server", cmd, starting="loading")
        url = f"http://127.0.0.1:{port}"
        self.server.wait_healthy(url, float(settings.extra.get("server_start_s", 120)))
        self.ep = EndpointBackend()
        self.ep.load(None, "endpoint", settings.model_copy(update={"endpoint": url}))
        self.context_tokens = per_slot
        self.device = "cpu" if n_gpu == 0 else "gpu"
        self.output_rule = self.ep.output_rule
        version = (binary.parent / "version.txt")
        built = version.read_text(encoding="utf-8", errors="replace")[:200].strip() if version.is_file() else ""
        self.backend_settings = {"server": "llama-server", "server_version": built.splitlines()[-1] if built else None,
                                 "parallel_slots": slots, "n_ctx_total": per_slot * slots, "n_ctx_per_slot": per_slot,
                                 "n_threads": threads, "n_batch": int(settings.extra.get("n_batch", 512)),
                                 "n_gpu_layers": n_gpu, "cont_batching": True, "sampling": "temperature 0",
                                 "command": " ".join(["llama-server", *cmd[1:]])}
        self.serving_mode = "llama-server"
        self.serving = (f"llama-server: {slots} parallel slots with continuous batching, {per_slot} tokens of "
                        f"context per slot, {threads} threads; measured over HTTP on loopback")

    def run(self, prompts, settings, on_done):
        if self.ep is not None:
            return self.ep.run(prompts, settings, on_done)
        return super().run(prompts, settings, on_done)

    def close(self) -> None:
        if self.ep is not None:
            self.ep.close()
            self.notes.extend(n for n in self.ep.notes if n not in self.notes)
        if self.server is not None:
            self.server.stop(grace_s=5)

    def _load_in_process(self, model: Path, settings: ProbeSettings) -> None:
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        import llama_cpp

        threads = settings.threads or len(os.sched_getaffinity(0))
        # the workload's longest prompt + output, rounded up to 256, when it needs more than the default 2048
        n_ctx, trained = self._n_ctx(model, settings)
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
            if not gpu["gpu_offload_supported"] and _nvidia_gpu_here():
                self.notes.append("this llama-cpp-python build has no GPU backend (CPU only); rebuild it with "
                                  "CMAKE_ARGS=-DGGML_CUDA=on pip install --force-reinstall --no-cache-dir "
                                  "llama-cpp-python to offload to an NVIDIA GPU")
        n_train = int(self.llm._model.n_ctx_train() or 0)
        self.context_tokens = min(self.llm.n_ctx(), n_train) if n_train > 0 else self.llm.n_ctx()
        asked = int(settings.extra.get("n_ctx") or 0)
        if trained and asked > n_ctx:
            self.notes.append(f"n_ctx {asked} is beyond the model's trained context ({trained}); n_ctx {n_ctx} was "
                              "used")
        elif n_train and n_ctx > n_train:
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

    def count_prompt_tokens(self, text: str) -> int | None:
        if self.ep is not None:
            return self.ep.count_prompt_tokens(text)
        return len(self._tokens(text))

    def counts_exactly(self) -> bool:
        return self.ep.counts_exactly() if self.ep is not None else True

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
