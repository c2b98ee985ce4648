"""The knowledge room, the bottom of the house: `knowledge/*.yaml` loaded and validated once (`load_knowledge`
→ `Knowledge`), their typed shapes (`schema`), the vocabularies the inputs share with them (fact names,
precisions), the condition language rules and support cells are written in, and the support-matrix lookups
that the planner and the ranking both read, which catalogue model a typed name means (`find_known`: the answers and
the planner both ask), and how old it all is (`age`: the engine versions it describes and what was read too long ago).

May import: nothing else of advisor's (and no probe).
"""
from importlib import import_module

# Loaded on first use (PEP 562): the vocabularies the answers need must not cost the schemas' import (~0.2 s), so a
# first page that only reads the answers paints before the knowledge is validated.
_WHERE = {"age": ("advisor.knowledge.age", None), "schema": ("advisor.knowledge.schema", None),
          "support": ("advisor.knowledge.support", None),
          "KNOWLEDGE_DIR": ("advisor.knowledge.load", "KNOWLEDGE_DIR"), "Knowledge": ("advisor.knowledge.load", "Knowledge"),
          "KnowledgeError": ("advisor.knowledge.load", "KnowledgeError"),
          "load_knowledge": ("advisor.knowledge.load", "load_knowledge"),
          "ENGINE_IDS": ("advisor.knowledge.schema", "ENGINE_IDS"),
          "FACT_NAMES": ("advisor.knowledge.vocabulary", "FACT_NAMES"),
          "PLAN_FACT_NAMES": ("advisor.knowledge.vocabulary", "PLAN_FACT_NAMES"),
          "Precision": ("advisor.knowledge.vocabulary", "Precision"),
          "find_known": ("advisor.knowledge.names", "find_known")}

__all__ = ["ENGINE_IDS", "age", "FACT_NAMES", "KNOWLEDGE_DIR", "PLAN_FACT_NAMES", "Knowledge", "KnowledgeError", "Precision",
           "find_known", "load_knowledge", "schema", "support"]


def __getattr__(name: str):
    try:
        module, attr = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module 'advisor.knowledge' has no attribute {name!r}") from None
    value = import_module(module) if attr is None else getattr(import_module(module), attr)
    globals()[name] = value
    return value


if False:  # noqa: SIM108 (for import-linter and readers: what the names above come from)
    from advisor.knowledge import age, schema, support  # noqa: F401
    from advisor.knowledge.load import KNOWLEDGE_DIR, Knowledge, KnowledgeError, load_knowledge  # noqa: F401
    from advisor.knowledge.schema import ENGINE_IDS  # noqa: F401
    from advisor.knowledge.vocabulary import FACT_NAMES, PLAN_FACT_NAMES, Precision  # noqa: F401
