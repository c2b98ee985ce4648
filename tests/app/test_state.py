"""The URL mirror's defaults: the first visit renders without the answers' models, so their defaults are
written out in ui/state.py. They must stay what the model says, or a fresh session would write a link."""
import subprocess
import sys

from advisor.inputs import Answers
from ui.state import DEFAULT_ANSWERS, default_answers


def test_the_written_defaults_are_the_models_defaults():
    assert DEFAULT_ANSWERS == Answers().model_dump(mode="json", exclude_none=True)


def test_default_answers_is_a_copy_the_page_may_edit():
    a = default_answers()
    a["model"]["params_b"] = 70.0
    assert DEFAULT_ANSWERS["model"]["params_b"] == 7.0


def test_the_hardware_glance_does_not_import_the_answers_models():
    code = ("import sys; import advisor.inputs.hardware as h; h.glance(); "
            "print('advisor.inputs.answers' in sys.modules, 'advisor.knowledge.load' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "False"]
