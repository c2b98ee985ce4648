"""Inference-engine selection advisor: knowledge, hardware detection, rules engine, planner, report.

Importing this package imports no inference engine; see tests/advisor/test_imports.py.
"""
__all__ = ["__version__"]
__version__ = "0.1.0"
