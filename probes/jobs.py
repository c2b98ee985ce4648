"""Probe jobs for the UI, owned by the server process rather than by a browser tab.

A job runs one or several engines in sequence in a background thread and hands each result to `on_result`
(the UI saves it to history) the moment it ends, whatever the page does. A reloaded or second tab finds the
running job on the board, shows its progress and can cancel it. One job at a time: probes measure the
machine, and two at once would measure each other.
"""
from __future__ import annotations

import atexit
import itertools
import threading
import time
from typing import Callable

from probes.result import ProbeResult, ProbeSettings
from probes.runner import run_probe
from probes.sweep_result import SweepLevel, SweepResult, level_outcome

_IDS = itertools.count(1)


class ProbeJob:
    def __init__(self, settings: list[ProbeSettings],
                 on_result: Callable[[ProbeResult], int | None] | None = None, sweep: dict | None = None,
                 on_sweep: Callable[..., int | None] | None = None, served=None) -> None:
        self.id = next(_IDS)
        self.served = served  # a probes.served.ServeSpec: the one engine's bundled server is started and swept
        self.settings = settings
        self.on_result = on_result
        self.sweep = sweep  # {"levels": [...], "until_sla": bool, "goodput_share": float}: a sweep per engine
        self.on_sweep = on_sweep
        self.sweeps: list[SweepResult] = []
        self.group = f"job-{self.id}-{int(time.time())}"
        self.cancel = threading.Event()
        self.results: list[ProbeResult] = []
        self.run_ids: list[int | None] = []  # what on_result returned (a history id), per result
        self.save_errors: list[str] = []
        self.index = 0  # the engine being measured, 0-based
        self.current: str | None = None
        self.phase = "queued"
        self.message = ""
        self.done_requests = 0
        self.total_requests = 0
        self.level: int | None = None  # a sweep's level being measured, 0-based, of `levels`, at `level_c`
        self.levels: int | None = None
        self.level_c: int | None = None
        self.session: str | None = None  # the browser session that started it (the UI shows its own evidence)
        self.measure_started: float | None = None  # when the current run's (or level's) measured requests began
        self.finished = threading.Event()
        self.started = time.time()
        self.ended: float | None = None
        self._thread = threading.Thread(target=self._run, name=f"probe-job-{self.id}", daemon=True)

    def _event(self, ev: dict) -> None:
        if ev.get("type") == "sweep":
            self.level, self.levels, self.level_c = ev.get("level"), ev.get("levels"), ev.get("concurrency")
            self.done_requests, self.total_requests = 0, 0
            return
        phase = ev.get("phase", self.phase)
        if phase != self.phase:
            self.message = ""  # a new phase: the old phase's message no longer applies
        self.phase = phase
        if ev.get("message"):
            self.message = ev["message"]
        if "total" in ev:
            if ev["done"] == 0 or self.measure_started is None:  # this run's (or this level's) measuring begins
                self.measure_started = time.monotonic()
            self.done_requests, self.total_requests = ev["done"], ev["total"]

    def _run(self) -> None:
        try:
            for i, s in enumerate(self.settings):
                if self.cancel.is_set():
                    break
                self.index, self.current, self.phase, self.message = i, s.engine, "start", ""
                self.done_requests, self.total_requests = 0, s.requests
                if self.served is not None:
                    self._served(s)
                    break
                if self.sweep is not None:
                    self._sweep_one(s)
                    continue
                self._probe(s)
        finally:
            self.phase = "done"
            self.ended = time.time()
            self.finished.set()

    def _probe(self, s: ProbeSettings, on_event=None, cancel=None) -> ProbeResult:
        try:
            res = run_probe(s, on_event=on_event or self._event, cancel=cancel or self.cancel)
        except Exception as err:  # noqa: BLE001 (a job must always end and say why)
            from probes.redact import redact_text

            why = redact_text(f"the probe could not start: {type(err).__name__}: {err}", s.secrets())  # then cut
            res = ProbeResult(engine=s.engine, status="error", settings=s, reason=why[:500])
        self.results.append(res)
        rid = None
        if self.on_result is not None:
            try:
                rid = self.on_result(res)
            except Exception as err:  # noqa: BLE001 (the result stays in the job, downloadable)
                self.save_errors.append(f"{type(err).__name__}: {err}"[:300])
        self.run_ids.append(rid)
        return res

    def _sweep_one(self, s: ProbeSettings) -> None:
        from probes.sweep import levels_for, run_sweep

        sw = self.sweep or {}
        plan_max = (sw.get("plan_max") or {}).get(s.engine)
        first = len(self.run_ids)
        share = float(sw.get("goodput_share", 0.9))
        # the sweep's row is written as it starts and after each level, so a server killed mid-sweep leaves its
        # trace and the levels it finished (history marks it "interrupted" at the next start); capacity is the
        # finished sweep's to say
        partial = SweepResult(engine=s.engine, status="running", ttft_target_ms=s.ttft_target_ms, goodput_share=share,
                              plan_max_concurrency=plan_max, started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                              answers_id=s.answers_id, asked_concurrency=s.asked_concurrency)

        def progress() -> None:
            if self.on_sweep is None:
                return
            partial.run_ids = self.run_ids[first:]
            try:
                self.on_sweep(partial, self.group, status="running")
            except Exception:  # noqa: BLE001 (the end's save says what failed; the levels' runs are saved apart)
                pass

        def level(st: ProbeSettings, on_event=None, cancel=None) -> ProbeResult:
            res = self._probe(st, on_event, cancel)
            lv = SweepLevel.of(st.concurrency, res)
            lv.outcome = level_outcome(lv, s.ttft_target_ms, share)
            partial.levels.append(lv)
            partial.busy = partial.busy or lv.busy
            partial.device, partial.model = partial.device or res.device, partial.model or res.model
            partial.serving = partial.serving or res.serving
            progress()
            return res

        progress()
        try:
            out = run_sweep(s, levels_for(sw.get("levels"), plan_max),
                            until_sla=bool(sw.get("until_sla", True)), goodput_share=share,
                            plan_max=plan_max, plan_total_bound=(sw.get("plan_total") or {}).get(s.engine),
                            on_event=self._event, cancel=self.cancel, runner=level)
        except Exception as err:  # noqa: BLE001
            out = SweepResult(engine=s.engine, status="error", reason=f"{type(err).__name__}: {err}"[:500],
                              levels=partial.levels)
        out.run_ids = self.run_ids[first:]
        self._keep(out)

    def _keep(self, out: SweepResult) -> None:
        """A finished sweep: in the job, and saved by on_sweep (a failed save is said, the sweep stays here)."""
        self.sweeps.append(out)
        if self.on_sweep is not None:
            try:
                self.on_sweep(out, self.group)
            except Exception as err:  # noqa: BLE001
                self.save_errors.append(f"{type(err).__name__}: {err}"[:300])

    def _served(self, s: ProbeSettings) -> None:
        """The bundle's server, started by a supervisor that owns its process group; its levels are endpoint probes
        (they are in the sweep's results; the history keeps the sweep, whose `deployed` says what ran)."""
        from probes.served import run_served
        from probes.sweep_result import DeployedRun

        sw = self.sweep or {}
        self.current = self.served.engine
        share = float(sw.get("goodput_share", 0.9))
        # saved as running at its start and as each level starts, like a plain sweep: a server killed mid-run leaves
        # its trace (the history marks it "interrupted" at the next start), never nothing
        partial = SweepResult(engine=self.served.engine, status="running", ttft_target_ms=s.ttft_target_ms,
                              goodput_share=share, started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                              answers_id=s.answers_id, asked_concurrency=s.asked_concurrency,
                              deployed=DeployedRun(engine=self.served.engine,
                                                   bundle_command=self.served.bundle_command))

        def save_running() -> None:
            if self.on_sweep is not None:
                try:
                    self.on_sweep(partial, self.group, status="running")
                except Exception:  # noqa: BLE001 (the end's save says what failed)
                    pass

        def event(ev: dict) -> None:
            if ev.get("type") == "sweep":
                save_running()
            self._event(ev)

        save_running()
        try:
            out = run_served(self.served, s, [int(c) for c in sw.get("levels") or [1, 2, 4]],
                             until_sla=bool(sw.get("until_sla", False)), goodput_share=share, on_event=event,
                             cancel=self.cancel)
        except Exception as err:  # noqa: BLE001 (a job must always end and say why)
            out = SweepResult(engine=self.served.engine, status="error", reason=f"{type(err).__name__}: {err}"[:500])
        self.results.extend(out.results)
        self._keep(out)

    @property
    def running(self) -> bool:
        return not self.finished.is_set()

    @property
    def fraction(self) -> float:
        n = len(self.settings)
        if self.finished.is_set():
            return 1.0
        part = self.done_requests / self.total_requests if self.total_requests else 0.0
        if self.sweep is not None:
            if self.levels:  # within this engine's sweep: its levels, then this level's requests
                part = ((self.level or 0) + part) / self.levels
            return min(1.0, (len(self.sweeps) + part) / n)
        return min(1.0, (len(self.results) + part) / n)

    @property
    def left_s(self) -> float | None:
        """The measuring's time left at the pace of the requests measured so far (walk-3 L12: the first figure came
        only at the end); None until one has finished."""
        done, total = self.done_requests, self.total_requests
        if self.phase != "run" or not done or not total or self.measure_started is None or done >= total:
            return None
        return (time.monotonic() - self.measure_started) / done * (total - done)

    @property
    def elapsed_s(self) -> float:
        return (self.ended or time.time()) - self.started


class JobBoard:
    """The server's probe jobs: the one running now, and the last ones that ended."""

    KEEP = 20

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.jobs: list[ProbeJob] = []
        atexit.register(self.shutdown)

    @property
    def current(self) -> ProbeJob | None:
        return next((j for j in reversed(self.jobs) if j.running), None)

    def busy(self) -> bool:
        return self.current is not None

    def start(self, settings: list[ProbeSettings],
              on_result: Callable[[ProbeResult], int | None] | None = None, sweep: dict | None = None,
              on_sweep: Callable[..., int | None] | None = None, served=None) -> ProbeJob | None:
        """None when a job is running (the caller says so). With `sweep`, each engine is swept over its levels, and
        `on_sweep(sweep, group, status="running")` is called as it starts and after each level, then
        `on_sweep(sweep, group)` at its end (history.save_sweep). With `served` (a probes.served.ServeSpec), the first
        settings' workload is run against that bundled server at sweep["levels"], started and stopped by the job."""
        with self._lock:
            if self.busy():
                return None
            job = ProbeJob(settings, on_result, sweep, on_sweep, served)
            self.jobs = [*self.jobs[-(self.KEEP - 1):], job]
            job._thread.start()
            return job

    def get(self, job_id: int | None) -> ProbeJob | None:
        return next((j for j in self.jobs if j.id == job_id), None)

    def shutdown(self, wait_s: float = 10.0) -> None:
        """At server exit: cancel the running job, so its engine process is killed, not orphaned."""
        job = self.current
        if job is not None:
            job.cancel.set()
            job.finished.wait(wait_s)
