"""Live probes: one backend per engine, each run in a child process."""
