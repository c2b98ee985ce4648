"""The knowledge room, the bottom of the house: `knowledge/*.yaml` loaded and validated once (`load_knowledge`
→ `Knowledge`), their typed shapes (`schema`), the vocabularies the inputs share with them (fact names,
precisions), the condition language rules and support cells are written in, and the support-matrix lookups
that the planner and the ranking both read, and how old it all is (`age`: the engine versions it describes and
what was read too long ago).

May import: nothing else of advisor's (and no probe).
"""
from advisor.knowledge import age, schema, support
from advisor.knowledge.load import KNOWLEDGE_DIR, Knowledge, KnowledgeError, load_knowledge
from advisor.knowledge.schema import ENGINE_IDS
from advisor.knowledge.vocabulary import FACT_NAMES, PLAN_FACT_NAMES, Precision

__all__ = ["ENGINE_IDS", "age", "FACT_NAMES", "KNOWLEDGE_DIR", "PLAN_FACT_NAMES", "Knowledge", "KnowledgeError", "Precision",
           "load_knowledge", "schema", "support"]
