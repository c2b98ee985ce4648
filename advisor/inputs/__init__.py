"""What the user and the machine say: the answers file (the 8 checklist questions and the model block, validated
at the edge), this machine's detected hardware and installed engines, and both flattened into the named facts
that rule conditions test.

May import: advisor.knowledge.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Where each exported name lives. Resolved on first use (PEP 562), so the home page's hardware glance imports
# only advisor.inputs.hardware, not the answers' models (the first render waits for every import).
_HOME = {"Answers": "answers", "AnswersError": "answers", "ModelBlock": "answers", "TargetHardware": "answers",
         "answers_from_text": "answers", "answers_id": "answers", "dump_answers": "answers",
         "load_answers": "answers", "parse_answers": "answers", "build_facts": "facts", "plan_facts": "facts",
         "GpuInfo": "hardware", "Hardware": "hardware", "detect": "hardware"}

if TYPE_CHECKING:
    from advisor.inputs.answers import (Answers, AnswersError, ModelBlock, TargetHardware, answers_from_text,
                                        answers_id, dump_answers, load_answers, parse_answers)
    from advisor.inputs.facts import build_facts, plan_facts
    from advisor.inputs.hardware import GpuInfo, Hardware, detect
    from advisor.knowledge.vocabulary import Precision


def __getattr__(name: str):
    if name == "Precision":
        from advisor.knowledge.vocabulary import Precision

        return Precision
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


__all__ = ["Answers", "AnswersError", "GpuInfo", "Hardware", "ModelBlock", "Precision", "TargetHardware",
           "answers_from_text", "answers_id", "build_facts", "detect", "dump_answers", "load_answers", "parse_answers",
           "plan_facts"]
