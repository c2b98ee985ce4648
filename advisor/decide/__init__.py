"""The ranking: the rules engine turns (answers, hardware, knowledge) into a Recommendation, each point of a
score a sourced contribution (base, rules, support-matrix cells), with the engines it excludes and the smallest
answer changes that would flip its top two. Pure; no I/O.

May import: advisor.planner, advisor.inputs, advisor.knowledge.
"""
from advisor.decide.recommendation import ExcludedEngine, Flip, RankedEngine, Reason, Recommendation
from advisor.decide.rules import recommend
from advisor.decide.scoring import score, totals

__all__ = ["ExcludedEngine", "Flip", "RankedEngine", "Reason", "Recommendation", "recommend", "score", "totals"]
