"""What every engine backend provides. Runs inside the probe's child process.

A backend imports its engine only inside its methods: a missing engine is a normal state that
`availability()` reports with the reason and the install command.
"""
from __future__ import annotations

import importlib.metadata as md
import importlib.util
import queue
import threading
import time
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator

from probes.result import ProbeSettings, RequestRecord
from probes.workload import Prompt, as_prompt, output_tokens


#: every request of the measured run as it finishes (run_clients and drive append here), so a stop signal in the
#: child can report the requests that finished before it (probes/child.py)
FINISHED: list[RequestRecord] = []


class Unavailable(Exception):
    """The engine cannot run here; str() is the reason."""


_PRCTL: list = []  # libc's prctl, looked up once (a forked child about to exec must not dlopen)


def _prctl():
    if not _PRCTL:
        import ctypes
        import sys

        fn = None
        if sys.platform.startswith("linux"):
            try:
                fn = ctypes.CDLL(None, use_errno=True).prctl
            except (OSError, AttributeError):
                fn = None
        _PRCTL.append(fn)
    return _PRCTL[0]


def die_with_parent(parent_pid: int | None = None) -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux PR_SET_PDEATHSIG; elsewhere nothing).

    A watchdog thread cannot do this for a stopped process (SIGSTOP freezes every thread), but the kernel's signal
    still reaches it. False when the parent is already not `parent_pid` (it died before the call: the signal will
    never come, so the caller exits). The signal follows the thread that started this process: the probe's runner
    waits in that thread until the child ends."""
    import os
    import signal

    fn = _prctl()
    if fn is not None:
        fn(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    return parent_pid is None or os.getppid() == parent_pid


def dies_with_this_process():
    """preexec_fn for a process an engine starts (llama-server), and for the probe child itself: it is killed when this
    process dies, however that ends (a SIGKILLed probe child has no chance to stop it, and the child's group is not
    killed by anyone then), and even if it is stopped before its own code runs (asked for before exec)."""
    import os

    me = os.getpid()
    _prctl()  # resolved here, before the fork

    def preexec() -> None:
        if not die_with_parent(me):
            os._exit(137)

    return preexec


class Backend:
    id: ClassVar[str]
    import_name: ClassVar[str | None]
    distributions: ClassVar[tuple[str, ...]] = ()
    install_hint: ClassVar[str] = ""
    #: (import name, distribution) pairs that must all be importable; default: import_name itself
    requires: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: formats this backend loads directly
    formats: ClassVar[tuple[str, ...]] = ()
    #: a GGUF is dequantised once into an HF folder (cached) that this backend then loads
    gguf_via_hf: ClassVar[bool] = False

    def __init__(self) -> None:
        self.device = "cpu"
        self.backend_settings: dict[str, Any] = {}
        self.serving = "one request at a time (no batching); concurrent requests queue in the client"
        self.serving_mode = "in-process"  # see ProbeResult.serving_mode
        self.notes: list[str] = []
        #: tokens of context a request may use (prompt + output), known after load(); None when unknown
        self.context_tokens: int | None = None
        #: how this backend keeps every request's output at exactly its max_tokens (said in the notes)
        self.output_rule = "the end-of-sequence token is banned until the request's output length"

    # ------------------------------------------------------------------ availability
    @classmethod
    def version(cls) -> str | None:
        for dist in cls.distributions:
            try:
                return md.version(dist)
            except md.PackageNotFoundError:
                continue
        return None

    @classmethod
    def availability(cls) -> str | None:
        """None when the engine can run here, else the reason. Imports nothing."""
        needs = cls.requires or ((cls.import_name, " or ".join(cls.distributions) or cls.import_name),)
        for module, dist in needs:
            if module and importlib.util.find_spec(module) is None:
                return f"{module} is not importable ({dist} not installed)"
        return None

    # ------------------------------------------------------------------ lifecycle
    def prepare(self, model: Path, fmt: str, settings: ProbeSettings, progress: Callable[[str, str], None]
                ) -> tuple[Path, str]:
        """Convert the model into a format this backend loads, once (cached)."""
        model, fmt = self._gguf_to_hf(model, fmt, progress)
        if fmt not in self.formats:
            also = "; GGUF through a one-off conversion" if self.gguf_via_hf else ""
            raise Unavailable(f"{self.id} cannot load a {fmt} model (it loads: {', '.join(self.formats)}{also})")
        return model, fmt

    def _gguf_to_hf(self, model: Path, fmt: str, progress: Callable[[str, str], None]) -> tuple[Path, str]:
        if fmt == "gguf" and self.gguf_via_hf:
            from probes.models import gguf_to_hf

            return gguf_to_hf(model, progress), "hf"
        return model, fmt

    def estimate_memory_mb(self, model: Path, fmt: str, settings: ProbeSettings) -> float:
        from probes.models import file_size_mb

        return file_size_mb(model) * 1.3 + 300

    #: what estimate_memory_mb counted (weights, the KV cache of n tokens), said when a probe is refused for memory
    memory_detail: str | None = None

    def kv_cache_mb(self, model: Path, n_ctx: int, bytes_per_element: float) -> float:
        """The KV cache of n_ctx tokens from the model's own files (workload.model_shape); 0 when they do not say.
        Counted in the memory estimate: at a long context it outweighs a small model (131k tokens of SmolLM2-135M
        are 2.9 GB of KV beside 94 MB of weights)."""
        from probes.workload import model_shape

        shape = model_shape(model)
        mb = shape.kv_cache_mb(n_ctx, bytes_per_element) if shape else None
        return mb or 0.0

    def load(self, model: Path, fmt: str, settings: ProbeSettings) -> None:
        raise NotImplementedError

    def stream(self, prompt: str, settings: ProbeSettings, max_tokens: int | None = None
               ) -> Iterator[tuple[str, Any]]:
        """Yield ("prompt_tokens", n) once, then ("token", token_id_or_text) per output token: exactly
        `max_tokens` of them (default: the settings' output length), the end-of-sequence token banned."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the prompt in the engine's tokens
    def count_prompt_tokens(self, text: str) -> int | None:
        """Tokens of `text` as one user turn after this engine's chat template, in its own tokenizer, as the
        engine will see them; None when this backend cannot count (then prompts are not fitted)."""
        return None

    def counts_exactly(self) -> bool:
        """Whether count_prompt_tokens is the engine's own count (an endpoint without a tokenizer guesses)."""
        return True

    def close(self) -> None:
        pass

    # ------------------------------------------------------------------ serving
    def run(self, prompts: list[Prompt | str], settings: ProbeSettings, on_done: Callable[[int], None]
            ) -> list[RequestRecord]:
        """Default: `concurrency` client threads submit at once; the engine serves one at a time."""
        return run_serialised(self, prompts, settings, on_done)


def prompts_of(prompts: list[Prompt | str], settings: ProbeSettings) -> list[Prompt]:
    """Plain strings (the legacy mix) become Prompts with the settings' output length."""
    return [as_prompt(p, output_tokens(settings)) for p in prompts]


def _one(backend: Backend, index: int, prompt: Prompt, settings: ProbeSettings, lock: threading.Lock | None
         ) -> RequestRecord:
    # plain locals in the hot loop: the harness must cost < 3% of decode time
    submitted = time.perf_counter()
    times: list[float] = []
    prompt_tokens = error = None
    clock = time.perf_counter
    try:
        if lock is not None:
            lock.acquire()
        try:
            for kind, value in backend.stream(prompt.text, settings, prompt.max_tokens):
                if kind == "token":
                    times.append(clock())
                else:
                    prompt_tokens = value
        finally:
            if lock is not None:
                lock.release()
        if not times:
            error = "the engine returned no tokens"
    except Exception as err:  # an engine failure on one request is recorded, not fatal
        error = f"{type(err).__name__}: {err}"
    return RequestRecord(index=index, prompt_tokens=prompt_tokens, output_tokens=len(times), submitted_s=submitted,
                         first_token_s=times[0] if times else None, token_times_s=times, finished_s=clock(),
                         error=error)


def run_clients(prompts: list[Prompt], concurrency: int, one: Callable[[int, Prompt], RequestRecord],
                on_done: Callable[[int], None]) -> list[RequestRecord]:
    """`concurrency` client threads take prompts from one queue and submit them as soon as they are free."""
    todo: queue.Queue[tuple[int, Prompt]] = queue.Queue()
    for i, p in enumerate(prompts):
        todo.put((i, p))
    out: list[RequestRecord] = []
    out_lock = threading.Lock()
    FINISHED.clear()  # the warm-up's requests are not the measured run's

    def worker() -> None:
        while True:
            try:
                i, p = todo.get_nowait()
            except queue.Empty:
                return
            rec = one(i, p)
            with out_lock:
                out.append(rec)
                FINISHED.append(rec)
                on_done(len(out))

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, min(concurrency, len(prompts))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(out, key=lambda r: r.index)


def run_serialised(backend: Backend, prompts: list[Prompt | str], settings: ProbeSettings,
                   on_done: Callable[[int], None]) -> list[RequestRecord]:
    prompts = prompts_of(prompts, settings)
    lock = threading.Lock()
    out = run_clients(prompts, settings.concurrency, lambda i, p: _one(backend, i, p, settings, lock), on_done)
    workers = max(1, min(settings.concurrency, len(prompts)))
    if workers > 1:
        backend.serving = (f"{workers} concurrent client requests, served one at a time by the engine "
                           "(no batching in-process): TTFT includes the wait behind other requests")
    return out
