"""One probe at a time, in the background, for the UI: progress, cancel, and the result when done."""
from __future__ import annotations

import threading
import time

from probes.result import ProbeResult, ProbeSettings
from probes.runner import run_probe

_SLOT = threading.Lock()


class ProbeJob:
    """Runs one or several engines in sequence in a background thread; only one job per process."""

    def __init__(self, settings: list[ProbeSettings]) -> None:
        self.settings = settings
        self.cancel = threading.Event()
        self.results: list[ProbeResult] = []
        self.current: str | None = None
        self.phase = "queued"
        self.message = ""
        self.done_requests = 0
        self.total_requests = 0
        self.finished = threading.Event()
        self.started = time.time()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @classmethod
    def start(cls, settings: list[ProbeSettings]) -> "ProbeJob | None":
        """None when another probe is running (the caller says so)."""
        if not _SLOT.acquire(blocking=False):
            return None
        job = cls(settings)
        job._thread.start()
        return job

    @staticmethod
    def busy() -> bool:
        return _SLOT.locked()

    def _event(self, ev: dict) -> None:
        self.phase = ev.get("phase", self.phase)
        self.message = ev.get("message", self.message)
        if "total" in ev:
            self.done_requests, self.total_requests = ev["done"], ev["total"]

    def _run(self) -> None:
        try:
            for s in self.settings:
                if self.cancel.is_set():
                    break
                self.current, self.phase, self.done_requests, self.total_requests = s.engine, "start", 0, s.requests
                self.results.append(run_probe(s, on_event=self._event, cancel=self.cancel))
        finally:
            self.phase = "done"
            self.finished.set()
            _SLOT.release()

    @property
    def fraction(self) -> float:
        n = len(self.settings)
        part = self.done_requests / self.total_requests if self.total_requests else 0.0
        return min(1.0, (len(self.results) + (0 if self.finished.is_set() else part)) / n)
