"""Importing advisor (and computing a recommendation) must not import any inference engine."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ["torch", "vllm", "tensorrt_llm", "onnxruntime", "onnxruntime_genai", "llama_cpp", "transformers"]


def test_no_engine_imported_by_advisor():
    code = (
        "import sys, advisor\n"
        "from advisor.knowledge.load import load_knowledge\n"
        "from advisor.inputs.answers import load_answers\n"
        "from advisor.inputs.hardware import detect\n"
        "from advisor.decide.rules import recommend\n"
        "k = load_knowledge(); recommend(load_answers('examples/startup-chat-api.yaml'), detect(k), k)\n"
        f"print(','.join(m for m in {ENGINES!r} if m in sys.modules))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == ""
