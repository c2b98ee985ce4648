"""A job's progress while it measures: the time left at the pace of the requests measured so far (walk-3 L12: the
first figure came only when the run ended). The events are the child's own progress events, fed in order; the clock is
the job's monotonic one, moved by hand so the test holds at any speed."""
from __future__ import annotations

import probes.jobs as jobs
from probes.result import ProbeSettings


def test_the_time_left_follows_the_pace_of_the_measured_requests(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(jobs.time, "monotonic", lambda: now[0])
    j = jobs.ProbeJob([ProbeSettings(engine="llama.cpp", requests=8)])
    j._event({"type": "progress", "phase": "load"})
    assert j.left_s is None  # not measuring yet
    j._event({"type": "progress", "phase": "run", "done": 0, "total": 8})
    assert j.left_s is None  # nothing measured: no pace to go by
    now[0] += 10.0
    j._event({"type": "progress", "phase": "run", "done": 2, "total": 8})
    assert j.left_s == 30.0  # 5 s a request, 6 to go
    now[0] += 30.0
    j._event({"type": "progress", "phase": "run", "done": 8, "total": 8})
    assert j.left_s is None  # done
    # a sweep's next level starts its own count and its own clock
    j._event({"type": "sweep", "level": 1, "levels": 2, "concurrency": 4})
    j._event({"type": "progress", "phase": "run", "done": 0, "total": 20})
    now[0] += 4.0
    j._event({"type": "progress", "phase": "run", "done": 4, "total": 20})
    assert j.left_s == 16.0
