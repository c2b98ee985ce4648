"""The Checklist's model step asks the workload's shape (prompt lengths, shared prefixes): a prefix-heavy workload
is where SGLang's RadixAttention earns its place (issue 20), so a person must be able to say so without writing an
answers file. The choice lands in the answers, survives a language switch, and moves the ranking."""
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def _model_step() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("pages/1_Checklist.py").run()
    at.session_state["wizard_step"] = 8
    return at.run()


def test_prefix_sharing_is_asked_and_kept():
    at = _model_step()
    assert not at.exception
    box = at.selectbox(key="w_prefix")
    assert box.value == "low"
    box.set_value("high").run()
    assert at.session_state["answers"]["prefix_sharing"] == "high"
    at.selectbox(key="w_mix").set_value("long").run()
    assert at.session_state["answers"]["prompt_mix"] == "long"
    at.session_state["lang"] = "zh"
    at.run()
    assert not at.exception
    assert at.selectbox(key="w_prefix").value == "high" and at.session_state["answers"]["prefix_sharing"] == "high"
    assert "共享的提示前缀" in [b.label for b in at.selectbox]


def test_the_answer_reaches_the_ranking():
    from advisor.decide.rules import recommend
    from advisor.inputs.answers import parse_answers
    from advisor.knowledge import load_knowledge

    k = load_knowledge()
    base = {"concurrency": 64, "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 1},
            "model": {"name": "llama-3.1-8b", "precision": "bf16"}}
    low = recommend(parse_answers(base), None, k, with_flips=False)
    high = recommend(parse_answers({**base, "prefix_sharing": "high"}), None, k, with_flips=False)
    score = lambda rec, e: next(r.score for r in rec.ranking if r.engine == e)  # noqa: E731
    assert score(high, "sglang") > score(low, "sglang")
    assert score(high, "sglang") - score(low, "sglang") >= score(high, "vllm") - score(low, "vllm")
