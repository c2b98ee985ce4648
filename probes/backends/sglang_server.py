"""SGLang measured the way it serves: its own server, `python -m sglang.launch_server`, started by the probe's child
on a free loopback port and measured over HTTP by the endpoint client (the same metrics, sweeps and accounting as
every other engine), like llama.cpp's llama-server (probes/backends/llama_cpp.py).

SGLang has no in-process engine to drive token by token the way vLLM's AsyncLLM is: its runtime is a set of processes
(HTTP server + tokenizer manager, scheduler, detokenizer) behind that server, so the server is the engine as deployed.
It is started in the child's process tree (its memory is sampled, it dies with the probe) with nothing fetched from a
hub (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE) and never --trust-remote-code.

The flags are those of SGLang 0.5.23 (`python -m sglang.launch_server --help`; python/sglang/srt/arg_groups/fields/
in that release, whose server_args.py builds the parser from them): --model-path, --host, --port, --context-length,
--max-running-requests, --max-total-tokens, --mem-fraction-static, --device, --tp-size, --disable-radix-cache,
--dtype, --log-level — https://docs.sglang.io/advanced_features/server_arguments.html

Where it runs (https://docs.sglang.io/docs/hardware-platforms/cpu_server, read 2026-12-01): NVIDIA GPUs (`pip install
sglang`), AMD GPUs (ROCm build), and "CPUs equipped with Intel® AMX® Instructions, which are 4th generation or
newer Intel® Xeon® Scalable Processors", where SGLANG_USE_CPU_ENGINE=1 is required and the CPU kernels are built
from SGLang's sources (sgl-kernel/pyproject_cpu.toml, distribution `sglang-kernel-cpu`): PyPI's sglang-kernel is the
CUDA build, and SGLang 0.5.23 with SGLANG_USE_CPU_ENGINE=1 imports `copy_all_layer_kv_cache_cpu` from sgl_kernel at
start-up (sglang/kernels/ops/kvcache/cache_move.py), so without them it cannot start.
"""
from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
import platform
from pathlib import Path

from probes.backends.base import Backend
from probes.result import ProbeSettings

CPU_DOC = "https://docs.sglang.io/docs/hardware-platforms/cpu_server"
#: the distribution of SGLang's CPU kernels (sgl-kernel/pyproject_cpu.toml); not on PyPI
CPU_KERNELS_DIST = "sglang-kernel-cpu"
DEFAULT_START_S = 600.0  # loading + CUDA graph capture on a GPU; llama-server's is 120
MAX_INFO_BYTES = 256 * 1024  # one /server_info answer (it lists every server argument)
#: what backend_settings keeps of GET /server_info: scalars only (the answer also holds the launch command and
#: every argument, an API key among them when one is set: never copied whole)
_SERVER_INFO_KEYS = ("version", "max_total_num_tokens", "mem_fraction_static", "max_running_requests",
                     "context_length", "attention_backend", "sampling_backend", "dtype", "kv_cache_dtype",
                     "chunked_prefill_size", "cuda_graph_max_bs", "schedule_policy", "disable_radix_cache")
_MODEL_INFO_KEYS = ("model_path", "tokenizer_path", "is_generation", "model_type", "architectures")


def cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (PROBES_CPUINFO names another file: tests, or another machine's
    copy); empty where there is none (not Linux)."""
    path = os.environ.get("PROBES_CPUINFO") or "/proc/cpuinfo"
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_reason(flags: set[str] | None = None, machine: str | None = None) -> str | None:
    """Why SGLang's CPU backend cannot run on this CPU, None if it can: its CPU server page (CPU_DOC) is for "CPUs
    equipped with Intel® AMX® Instructions, which are 4th generation or newer Intel® Xeon® Scalable Processors"
    (SGLang itself checks torch.cpu._is_amx_tile_supported(), the amx_tile flag)."""
    flags = cpu_flags() if flags is None else flags
    machine = (machine or platform.machine()).lower()
    if machine not in ("x86_64", "amd64"):
        return (f"SGLang's CPU backend is documented for Intel Xeon CPUs with AMX (4th generation Xeon Scalable or "
                f"newer, {CPU_DOC}); this CPU is {machine}")
    if "amx_tile" in flags:
        return None
    has = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "neither AVX-512 nor AVX2"
    return (f"SGLang's CPU backend needs Intel AMX (4th generation Xeon Scalable or newer, {CPU_DOC}); this CPU has "
            f"{has} and no AMX")


def cpu_kernels_installed() -> bool:
    """Whether sgl_kernel here is the CPU build, without importing it: the sglang-kernel-cpu distribution, or a
    source build whose ops library lies at the package's top level (PyPI's CUDA build keeps it under sm90/, sm100/)."""
    try:
        md.version(CPU_KERNELS_DIST)
        return True
    except md.PackageNotFoundError:
        pass
    spec = importlib.util.find_spec("sgl_kernel")
    if spec is None or not spec.submodule_search_locations:
        return False
    return any(Path(p).glob("common_ops*.so") for p in spec.submodule_search_locations)


def nvidia_gpu() -> bool:
    """An NVIDIA driver answers (NVML names GPU 0) — no torch import, no CUDA init."""
    from probes.gpu import nvml_name

    return Path("/proc/driver/nvidia/version").exists() or nvml_name(0) is not None


def amd_gpu() -> bool:
    """ROCm's kernel driver is there (/dev/kfd): SGLang's ROCm build serves on it."""
    return Path("/dev/kfd").exists()


def device_for(extra: dict) -> str:
    """`--device`: the probe's extra device when it names one, else cuda on an NVIDIA or AMD GPU (ROCm's torch calls
    it cuda too), else cpu."""
    asked = str(extra.get("device") or "auto").lower()
    if asked in ("cpu", "cuda"):
        return asked
    return "cuda" if nvidia_gpu() or amd_gpu() else "cpu"


def _kv_bytes(model: Path, extra: dict) -> int:
    """Bytes per KV element: SGLang's dtype "auto" takes the model's own (config.json dtype / torch_dtype); our GGUF
    conversion is float32."""
    import json

    dtype = extra.get("dtype")
    if not dtype:
        try:
            cfg = json.loads((Path(model) / "config.json").read_text(encoding="utf-8"))
            dtype = cfg.get("dtype") or cfg.get("torch_dtype")
        except (OSError, ValueError, RecursionError, AttributeError):
            dtype = None
    return 4 if str(dtype) in ("float32", "float") else 2


def _since_start_s() -> float:
    """Seconds since this process (the probe's child) started: the parent's deadline counts from then."""
    try:
        import time

        import psutil

        return max(0.0, time.time() - psutil.Process().create_time())
    except Exception:  # noqa: BLE001 (no psutil, or /proc unreadable: count from now)
        return 0.0


class SGLangBackend(Backend):
    id = "sglang"
    import_name = "sglang"
    distributions = ("sglang",)
    install_hint = ("NVIDIA GPU: make sglang (pip install sglang into its own venv, .venv-sglang); Intel Xeon with "
                    f"AMX: the CPU build from SGLang's sources ({CPU_DOC}), then PROBES_SGLANG_PYTHON=<its venv>/bin/"
                    "python")
    formats = ("hf",)
    # SGLang's GGUF path (--load-format gguf) dequantises with CUDA/MUSA/NPU kernels only ("Only CUDA, MUSA and NPU
    # support GGUF quantization currently", sglang/srt/layers/quantization/gguf.py, 0.5.23): the bundled GGUF goes
    # through the cached HF conversion, as for vLLM, so every engine loads the same weights
    gguf_via_hf = True

    server = None  # the sglang.launch_server process
    ep = None  # the endpoint client that measures it
    log = None

    @classmethod
    def availability(cls) -> str | None:
        """The platform first (installing SGLang on a CPU it cannot use would not help), then the package, then on a
        CPU its CPU kernels. Imports nothing."""
        device = device_for({})
        if device == "cpu":
            why = cpu_reason()
            if why:
                return why
        if importlib.util.find_spec("sglang") is None:
            if device == "cpu":
                return ("sglang is not importable (sglang not installed); this CPU has Intel AMX, but SGLang's CPU "
                        "build is not on PyPI: torch from PyTorch's CPU index and sgl-kernel compiled from SGLang's "
                        f"sources ({CPU_DOC})")
            return "sglang is not importable (sglang not installed)"
        if device == "cpu" and not cpu_kernels_installed():
            return (f"SGLang's CPU kernels ({CPU_KERNELS_DIST}, compiled from sgl-kernel/ with pyproject_cpu.toml, "
                    f"{CPU_DOC}) are not installed: PyPI's sglang-kernel is the CUDA build, and SGLang's CPU engine "
                    "does not start without them")
        return None

    # ------------------------------------------------------------------ sizes
    def _context(self, model: Path, settings: ProbeSettings) -> int:
        """Tokens of context per request: the workload's longest prompt + output rounded up to 256 (at least 2048)
        or extra context_length, never beyond the model's trained context."""
        from probes.workload import context_needed, model_shape

        need = context_needed(settings) or 0
        ctx = int(settings.extra.get("context_length") or max(2048, -(-need // 256) * 256))
        shape = model_shape(model)
        trained = shape.context_tokens if shape else None
        return min(ctx, trained) if trained else ctx

    def estimate_memory_mb(self, model: Path, fmt: str, settings: ProbeSettings) -> float:
        from probes.models import file_size_mb

        weights = file_size_mb(model)
        if device_for(settings.extra) != "cpu":  # weights and KV live on the GPU; host RAM holds the processes
            self.memory_detail = None
            return weights + 2000
        tokens = self._context(model, settings) * max(1, settings.concurrency)
        kv = self.kv_cache_mb(model, tokens, _kv_bytes(model, settings.extra))
        self.memory_detail = f"weights {weights:,.0f} MB + KV cache of {tokens:,} tokens {kv:,.0f} MB"
        return weights + kv + 2000  # HTTP server, tokenizer manager, scheduler and detokenizer each import torch

    # ------------------------------------------------------------------ the server
    def _command(self, model: Path, settings: ProbeSettings, port: int) -> tuple[list[str], dict]:
        from probes.registry import python_for

        extra = settings.extra
        device = device_for(extra)
        ctx = self._context(model, settings)
        seqs = max(1, settings.concurrency)
        tp = int(extra.get("tp_size", 1))
        cmd = [python_for("sglang"), "-m", "sglang.launch_server", "--model-path", str(model),
               "--host", "127.0.0.1", "--port", str(port), "--context-length", str(ctx),
               "--max-running-requests", str(seqs), "--device", device, "--tp-size", str(tp),
               "--log-level", str(extra.get("log_level", "warning"))]
        chosen = {"device": device, "context_length": ctx, "max_running_requests": seqs, "tp_size": tp}
        # on a CPU, the KV pool of exactly the run's sequences: left alone SGLang sizes it from free memory, and its CPU
        # page advises "proper `--max-total-tokens` to avoid the out-of-memory error" (CPU_DOC)
        if device == "cpu":
            total = int(extra.get("max_total_tokens") or ctx * seqs)
            cmd += ["--max-total-tokens", str(total)]
            chosen["max_total_tokens"] = total
        if extra.get("mem_fraction_static") is not None:
            cmd += ["--mem-fraction-static", str(float(extra["mem_fraction_static"]))]
            chosen["mem_fraction_static"] = float(extra["mem_fraction_static"])
        if extra.get("dtype"):
            cmd += ["--dtype", str(extra["dtype"])]
            chosen["dtype"] = str(extra["dtype"])
        prefix = bool(extra.get("prefix_cache", False))
        if not prefix:
            cmd.append("--disable-radix-cache")
        chosen["radix_cache"] = (
            "on (extra prefix_cache): requests sharing a prefix may be served from the cache" if prefix else
            "off (--disable-radix-cache): the probe measures no reuse between its requests (each prompt opens "
            "differently)")
        env = {k: v for k, v in os.environ.items() if k not in ("PROBE_EVENT_FD", "PROBE_PARENT_PID")}
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
        if device == "cpu":
            env["SGLANG_USE_CPU_ENGINE"] = "1"  # "required to enable the SGLang service with the CPU engine" (CPU_DOC)
            chosen["SGLANG_USE_CPU_ENGINE"] = "1"
        return cmd, {"chosen": chosen, "env": env}

    def load(self, model: Path, fmt: str, settings: ProbeSettings) -> None:
        import time

        from probes.backends._server import ServerProcess, free_port
        from probes.backends.endpoint import EndpointBackend
        from probes.models import ModelError

        port = free_port()
        cmd, how = self._command(model, settings, port)
        chosen = how["chosen"]
        # the parent kills the probe at timeout_s from its start: the wait leaves the measured run some of it
        left = settings.timeout_s - _since_start_s()
        try:
            asked = float(settings.extra.get("server_start_s", DEFAULT_START_S))
        except (TypeError, ValueError):
            raise ModelError(f"server_start_s must be a number of seconds, got "
                             f"{str(settings.extra.get('server_start_s'))[:40]!r}") from None
        start_s = max(1.0, min(asked, 0.7 * left))
        capped = "" if start_s >= asked else f" (the probe's timeout of {settings.timeout_s:g} s leaves no more)"
        t0 = time.monotonic()
        self.server = ServerProcess("SGLang's server", cmd, env=how["env"])
        url = f"http://127.0.0.1:{port}"
        try:
            # GET /health answers 200 once the server generates (SGLang's /health runs one token by default)
            self.server.wait_healthy(url, start_s, capped, request_s=5, poll_s=0.25)
            model_info = self._info(url, ("/model_info", "/get_model_info"), _MODEL_INFO_KEYS)
            if model_info.get("is_generation") is False:
                raise ModelError(f"SGLang serves {model} as an embedding model (is_generation false): nothing to "
                                 "generate")
            server_info = self._info(url, ("/server_info", "/get_server_info"), _SERVER_INFO_KEYS)
            started_s = time.monotonic() - t0
            self.ep = EndpointBackend()
            left = max(10.0, settings.timeout_s - _since_start_s())
            self.ep.load(None, "endpoint", settings.model_copy(update={"endpoint": url, "timeout_s": left}))
        except BaseException:
            self._stop()
            raise
        if settings.threads and chosen["device"] == "cpu":
            self.notes.append(f"--threads {settings.threads} is not applied to SGLang: its CPU engine binds its own "
                              "OpenMP threads (SGLANG_CPU_OMP_THREADS_BIND, not set here)")
        self.ep.notes[:0] = self.notes  # one list: what the client notes while measuring is in the result
        self.notes = self.ep.notes
        self.context_tokens = chosen["context_length"]
        if self.ep.context_tokens:
            self.context_tokens = min(self.context_tokens, self.ep.context_tokens)
        self.device = "cpu" if chosen["device"] == "cpu" else self._gpu_name()
        self.output_rule = self.ep.output_rule
        self.backend_settings = {
            "server": "sglang.launch_server", "server_version": server_info.get("version") or self.version(),
            **chosen, "server_start_s": round(started_s, 1), "sampling": "temperature 0",
            "api": "/v1/chat/completions (streamed)", "trust_remote_code": False,
            "hub": "offline (HF_HUB_OFFLINE=1, TRANSFORMERS_OFFLINE=1)",
            "server_info": {k: v for k, v in server_info.items() if k != "version"}, "model_info": model_info,
            "command": " ".join(["python -m sglang.launch_server", *cmd[3:]])}
        self.serving_mode = "sglang-server"
        self.serving = (f"SGLang's server: continuous batching by its scheduler, up to {chosen['max_running_requests']}"
                        f" running requests, {chosen['context_length']} tokens of context each, on "
                        f"{chosen['device']}; measured over HTTP on loopback")

    @staticmethod
    def _info(url: str, paths: tuple[str, ...], keys: tuple[str, ...]) -> dict:
        """The scalar fields `keys` of the first of `paths` that answers JSON (the newer route first: SGLang 0.5.23
        deprecates /get_model_info and /get_server_info); {} when none does. Read bounded: it is our server, but
        its answer goes into the result."""
        import json

        import httpx

        from probes.backends.endpoint import _read_capped
        from probes.models import ModelError

        for path in paths:
            try:
                with httpx.stream("GET", f"{url}{path}", timeout=10, trust_env=False) as r:
                    if r.status_code != 200:
                        continue
                    ans = json.loads(_read_capped(r, MAX_INFO_BYTES, path))
            except (httpx.HTTPError, ModelError, ValueError, RecursionError):
                continue
            if not isinstance(ans, dict):
                continue
            out = {}
            for k in keys:
                v = ans.get(k)
                if isinstance(v, list):
                    v = [x for x in v if isinstance(x, str)][:8] or None
                if isinstance(v, (str, int, float, bool)) or (isinstance(v, list) and v):
                    out[k] = v[:200] if isinstance(v, str) else v
            return out
        return {}

    @staticmethod
    def _gpu_name() -> str:
        from probes.gpu import cuda_device

        return cuda_device(0)

    def _stop(self) -> None:
        """End the server and the processes it started (scheduler, detokenizer)."""
        if self.server is not None:
            self.server.stop()

    # ------------------------------------------------------------------ measured through the endpoint client
    def run(self, prompts, settings, on_done):
        return self.ep.run(prompts, settings, on_done)

    def count_prompt_tokens(self, text: str) -> int | None:
        return self.ep.count_prompt_tokens(text) if self.ep is not None else None

    def counts_exactly(self) -> bool:
        return self.ep.counts_exactly() if self.ep is not None else False

    def close(self) -> None:
        if self.ep is not None:
            self.ep.close()
        self._stop()
