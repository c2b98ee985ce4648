"""Inference-engine selection advisor, laid out as its pipeline. Each room imports only the rooms below it
(.importlinter's layers contract):

    cli        the command line, on top
    report     everything that renders: Markdown/PDF report, charts, plan tables, support table, CLI text
    evidence   what was measured and what it means: history, probe and sweep checks, the verdict
    decide     the ranking: rules, scores, exclusions, "what would flip"
    planner    the capacity planner: what fits, at what context and concurrency, and the speed bounds
    inputs     what the user and the machine say: answers, detected hardware, facts
    knowledge  knowledge/*.yaml loaded and validated, its vocabularies and support-matrix lookups

Callers import the names each room's __init__ exports. Importing this package imports no inference engine;
see tests/advisor/test_imports.py.
"""
__all__ = ["__version__"]
__version__ = "0.1.0"
