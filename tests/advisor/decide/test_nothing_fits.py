"""Nothing fits: said first, with each engine's smallest fix; a fit that only an unknown RAM could make never
outranks one that does not fit (the walk's Llama-3.1-70B fp16 on one RTX 4090 with no RAM given)."""
from advisor.decide.rules import recommend
from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.report.terminal import recommendation_text

K = load_knowledge()
BIG = {"concurrency": 4, "model": {"name": "llama-3.1-70b", "precision": "fp16"},
       "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1}}


def test_an_offload_fit_that_needs_an_unknown_ram_is_charged_like_no_fit():
    rec = recommend(parse_answers(BIG), None, K, with_flips=False)
    lc = next(r for r in rec.ranking if r.engine == "llama.cpp")
    assert lc.plan.fits is None and lc.plan.device == "gpu+cpu" and lc.plan.offload_ram_gib > 100
    reason = next(x for x in lc.reasons if x.rule == "plan-offload-ram-unknown")
    assert reason.delta == -45 and "hardware.ram_gb" in reason.text
    # charged as much as an engine that does not load (plan-does-not-load), so it cannot lead on an unknown
    assert K.rules.rules[[r.id for r in K.rules.rules].index("plan-does-not-load")].self_delta == reason.delta


def test_nothing_fits_is_said_first_with_each_engines_fix():
    rec = recommend(parse_answers(BIG), None, K, with_flips=False)
    short = rec.nothing_fits()
    by = {name: (fix, ram) for name, fix, ram in short}
    assert by["vLLM"][0] and by["llama.cpp"][1] > 100  # a fix for vLLM; llama.cpp asks for the RAM it needs
    text = recommendation_text(rec, K)
    lines = text.splitlines()
    assert lines[0].startswith("Nothing fits as asked")
    assert any(line.startswith("- llama.cpp") and "hardware.ram_gb" in line for line in lines[1:1 + len(by)])
    zh = recommendation_text(recommend(parse_answers(BIG), None, K, lang="zh", with_flips=False), K, "zh")
    assert zh.splitlines()[0].startswith("按当前要求")


def test_with_the_ram_given_the_offload_plan_is_judged():
    a = {**BIG, "hardware": {**BIG["hardware"], "ram_gb": 256}}
    rec = recommend(parse_answers(a), None, K, with_flips=False)
    assert rec.ranking[0].engine == "llama.cpp" and rec.ranking[0].plan.fits
    assert rec.nothing_fits() is None
