"""Our plans against the measured rows aiconfigurator-core ships (systems/silicon_sample.csv in the installed package:
end-to-end TTFT and TPOT of vLLM, SGLang and TensorRT-LLM runs on H100 and H200, part of them InferenceX's database
dump of 2026-04-27, the rest the library team's own gap-analysis runs).

    PYTHONPATH=. python bench/silicon_sample_check.py [N]      # N rows drawn at random (seed 1); all when omitted

Not a held-out check of the measured-silicon predictor: its developers compare their model with these rows (that is
what the gap-analysis files are for), so its ITL here is not "unseen" the way bench/predict_vs_measured.py's is. Our
own serving model never saw them (none is in the fit). Each row is planned as a user would ask it: the catalogue
model, the precision, tensor parallel over the row's tp_size GPUs of that system, its concurrency and ISL/OSL; rows
with pipeline or attention data parallelism, or a model we do not catalogue, are left out. Prints per engine and per
batch the median signed and absolute error of the plan's TTFT p50 and ITL p50 (as shown: the library's ITL where it
applies) against the row's TTFT and TPOT, and the library's own TTFT beside ours.
"""
from __future__ import annotations

import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.inputs.answers import parse_answers  # noqa: E402
from advisor.knowledge.load import load_knowledge  # noqa: E402
from advisor.planner import make_plan  # noqa: E402

OURS = {"meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b", "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b",
        "meta-llama/Llama-3.1-70B": "llama-3.1-70b", "Qwen/Qwen3-32B": "qwen3-32b",
        "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b", "openai/gpt-oss-120b": "gpt-oss-120b",
        "deepseek-ai/DeepSeek-R1": "deepseek-r1", "deepseek-ai/DeepSeek-V3": "deepseek-v3",
        "MiniMaxAI/MiniMax-M2.5": "minimax-m2.5", "moonshotai/Kimi-K2.5": "kimi-k2.5"}
SYSTEMS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200"}
ENGINES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt-llm"}
BATCHES = ((1, 8), (9, 32), (33, 128), (129, 100_000))


def rows(path: Path) -> list[dict]:
    import csv

    with path.open(encoding="utf-8") as f:
        out = []
        for r in csv.DictReader(f):
            try:
                if (r["mode"] != "agg" or r["system"] not in SYSTEMS or r["model_path"] not in OURS
                        or float(r["pp_size"] or 1) != 1 or float(r["attention_dp_size"] or 1) != 1
                        or r["precision"] not in ("bf16", "fp8", "fp4", "int4")):
                    continue
                out.append({"system": r["system"], "engine": ENGINES[r["backend"]], "model": OURS[r["model_path"]],
                            "precision": r["precision"], "tp": int(float(r["tp_size"])), "isl": int(r["isl"]),
                            "osl": int(r["osl"]), "batch": int(float(r["batch_size"])),
                            "ttft": float(r["silicon_ttft_ms"]), "tpot": float(r["silicon_tpot_ms"]),
                            "source": r["silicon_data_source"].split(";")[0][:60]})
            except (KeyError, ValueError):
                continue
        return out


def _line(name: str, xs: list[tuple[float, float, float | None]]) -> str:
    tt, it = [x[0] for x in xs], [x[1] for x in xs]
    lib = [x[2] for x in xs if x[2] is not None]
    libs = f"  library's own TTFT: median {statistics.median(map(abs, lib)):.0%} ({statistics.median(lib):+.0%})" \
        if lib else ""
    return (f"  {name:22} {len(xs):>4} rows  TTFT as shown: median |error| {statistics.median(map(abs, tt)):>4.0%} "
            f"(signed {statistics.median(tt):+.0%})  ITL as shown: {statistics.median(map(abs, it)):>4.0%} "
            f"(signed {statistics.median(it):+.0%}){libs}")


def main(argv: list[str]) -> int:
    import importlib.util

    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None:
        print("aiconfigurator-core is not installed (requirements.txt): nothing to compare")
        return 0
    from advisor.planner import aic

    k = load_knowledge()
    aic.use_store(aic.default_store(k.aiconfigurator.version), k.aiconfigurator.version)
    all_rows = rows(Path(spec.origin).parent / "systems" / "silicon_sample.csv")
    if argv:
        random.Random(1).shuffle(all_rows)
        all_rows = all_rows[:int(argv[0])]
    per: dict[str, list] = {}
    for r in all_rows:
        ans = parse_answers({"concurrency": r["batch"], "ttft_p95_ms": 600000,
                             "hardware": {"gpu_vendor": "nvidia", "gpu_model": SYSTEMS[r["system"]], "gpu_count": r["tp"]},
                             "model": {"name": r["model"], "precision": r["precision"],
                                       "context_tokens": r["isl"] + r["osl"], "input_tokens": r["isl"],
                                       "output_tokens": r["osl"]}})
        p = make_plan(ans, None, k)
        pe = p.engines.get(r["engine"])
        sv = pe.serving if pe is not None else None
        at = sv.at_users if sv is not None else None
        if at is None or not at.ttft_ms_p50 or not at.itl_ms_p50:
            continue
        lib = None
        if sv.label == "silicon":
            # (its KV cache at 16 bits: the library's own default, not the plan's engine default)
            key, _ = aic.key_for(r["engine"], SYSTEMS[r["system"]], r["model"], r["precision"], r["tp"],
                                 2.0, bool(p.model.moe_experts), 1, k, spec=p.model)
            pt = aic.point(key, r["isl"], r["osl"], r["batch"]) if key is not None else None
            lib = pt.ttft_ms / r["ttft"] - 1 if pt is not None else None
        x = (at.ttft_ms_p50 / r["ttft"] - 1, at.itl_ms_p50 / r["tpot"] - 1, lib)
        per.setdefault(r["engine"], []).append(x)
        for lo, hi in BATCHES:
            if lo <= r["batch"] <= hi:
                per.setdefault(f"batch {lo}-{hi}", []).append(x)
        per.setdefault("all", []).append(x)
    print(f"aiconfigurator-core's measured rows (H100/H200, aggregated serving), planned as a user would ask them: "
          f"{len(per.get('all', []))} of {len(all_rows)} rows predicted; |plan / measured - 1|")
    for name in ("vllm", "sglang", "tensorrt-llm", *(f"batch {lo}-{hi}" for lo, hi in BATCHES), "all"):
        if per.get(name):
            print(_line(name, per[name]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
