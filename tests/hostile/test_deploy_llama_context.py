"""llama.cpp's bundle never asks for a context llama-server refuses (audit, low: `-c 104857600000`, beyond a C int:
llama-server reads -c with std::stoi into an int and stops at start). The answers schema allows 100,000 users of a
long context, so slots × typical tokens can pass 2**31 - 1; the bundle caps -c there and says so, in its language."""
from __future__ import annotations

import json

import pytest
import yaml

from tests.hostile.kit import bounded

INT32_MAX = 2**31 - 1


def _answers(tmp_path):
    p = tmp_path / "many-long.yaml"
    p.write_text(yaml.safe_dump({
        "concurrency": 100_000, "ttft_p95_ms": 100_000,
        "model": {"name": "llama-3.1-8b", "context_tokens": 131_072, "input_tokens": 100_000, "output_tokens": 1000},
        "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100", "gpu_count": 8, "gpu_memory_gb": 80}}))
    return p


@pytest.mark.parametrize("lang,said", [("en", "2,147,483,647"), ("zh", "2,147,483,647")])
def test_llama_cpp_context_stays_within_a_c_int(tmp_path, lang, said):
    o = bounded(["-m", "advisor", "deploy", "--answers", str(_answers(tmp_path)), "--engine", "llama.cpp",
                 "--format", "json", "--lang", lang], hard_limit_s=120)
    assert o.rc == 0 and "Traceback" not in o.err, o.err[-1500:]
    b = json.loads(o.out)
    ctx = next(a for a in b["args"] if a["flag"] == "-c")
    assert 0 < int(ctx["value"]) <= INT32_MAX, ctx
    assert said in ctx["why"] and any(said in w for w in b["warnings"]), (ctx["why"], b["warnings"])
    script = b["files"]["launch.sh"]
    assert f'"$@" {ctx["value"]}  #' in script and said in script
    if lang == "zh":
        assert any("\u4e00" <= ch <= "\u9fff" for ch in ctx["why"])
