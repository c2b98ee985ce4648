"""A stand-in for the `sglang` package in tests (tests/probes/backends/test_sglang.py): only
`python -m sglang.launch_server` exists, serving what SGLang's server serves. Never a measurement of SGLang."""
__version__ = "0.0.0+stub"
