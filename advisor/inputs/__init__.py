"""What the user and the machine say: the answers file (the 8 checklist questions and the model block, validated
at the edge), this machine's detected hardware and installed engines, and both flattened into the named facts
that rule conditions test.

May import: advisor.knowledge.
"""
from advisor.inputs.answers import (Answers, AnswersError, ModelBlock, TargetHardware, answers_from_text, answers_id,
                                    dump_answers, load_answers, parse_answers)
from advisor.inputs.facts import build_facts, plan_facts
from advisor.inputs.hardware import GpuInfo, Hardware, detect
from advisor.knowledge.vocabulary import Precision

__all__ = ["Answers", "AnswersError", "GpuInfo", "Hardware", "ModelBlock", "Precision", "TargetHardware",
           "answers_from_text", "answers_id", "build_facts", "detect", "dump_answers", "load_answers", "parse_answers",
           "plan_facts"]
