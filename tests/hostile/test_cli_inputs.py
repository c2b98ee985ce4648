"""Hostile answers files, arguments, probe results and output paths: exit 2 and one line, within bounds."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.hostile.kit import (STRING, answers_with_path, bounded, gguf_file, gstr, kv, llama_kvs)


def _answers(tmp, text: str | bytes):
    p = tmp / "answers.yaml"
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


ALIAS_BOMB = "\n".join(["a: &a [x, x, x, x, x, x, x, x, x]"] +
                       [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)] +
                       ["concurrency: *i"])

ANSWERS = [
    ("alias-bomb-under-known-key", ALIAS_BOMB, "concurrency"),
    ("alias-bomb-under-unknown-key", ALIAS_BOMB.replace("concurrency: *i", "lol: *i"), "lol"),
    ("deep-yaml-flow", "model: " + "[" * 50_000 + "]" * 50_000, "answers"),
    ("deep-yaml-block", "".join("  " * i + f"k{i}:\n" for i in range(3000)) + "  " * 3000 + "v: 1\n", "answers"),
    ("50MB", "concurrency: 1\n# " + "x" * (50 << 20) + "\n", "KiB"),
    ("duplicate-key", "concurrency: 1\nconcurrency: 2\n", "duplicate"),
    ("control-chars-raw", "conc\x1burrency: 1\n", "#x001b"),
    ("control-chars-in-key", '"conc\\eurrency\\a": 1\n', "unknown"),
    ("not-a-mapping", "- 1\n- 2\n", "mapping"),
    ("binary", b"\x00\xff\xfe" * 1000, "answers"),
    ("params-denormal", "model: {params_b: 1.0e-310}\n", "params_b"),
    ("params-nan", "model: {params_b: .nan}\n", "params_b"),
    ("params-inf", "model: {params_b: .inf}\n", "params_b"),
    ("concurrency-huge", f"concurrency: {10 ** 30}\n", "concurrency"),
    ("ram-denormal", "hardware: {gpu_vendor: none, ram_gb: 1.0e-310}\n", "ram_gb"),
    ("gpu-memory-denormal", "hardware: {gpu_vendor: nvidia, gpu_memory_gb: 1.0e-310}\n", "gpu_memory_gb"),
    ("python-tag", "concurrency: !!python/object/apply:os.system ['true']\n", "answers"),
]


@pytest.mark.parametrize("text,fragment", [c[1:] for c in ANSWERS], ids=[c[0] for c in ANSWERS])
@pytest.mark.parametrize("command", ["recommend", "plan"])
def test_hostile_answers_file(tmp_path, command, text, fragment):
    res = bounded(["-m", "advisor", command, "--answers", str(_answers(tmp_path, text))])
    line = res.one_line_error(2)
    assert fragment.lower() in line.lower(), line
    assert len(line) < 600 and "\x1b" not in line and "\x07" not in line


PROBE_ARGS = [
    ("timeout-nan", ["--timeout", "nan"]),
    ("timeout-inf", ["--timeout", "inf"]),
    ("timeout-1e309", ["--timeout", "1e309"]),
    ("timeout-negative", ["--timeout", "-1"]),
    ("requests-1e8", ["--requests", "100000000"]),
    ("requests-zero", ["--requests", "0"]),
    ("concurrency-huge", ["--concurrency", "1000000"]),
    ("max-tokens-huge", ["--max-tokens", "100000000"]),
    ("ttft-nan", ["--ttft-target-ms", "nan"]),
    ("unknown-engine", ["--engine", "tensorflow"]),
    ("endpoint-file-url", ["--engine", "endpoint", "--endpoint", "file:///etc/passwd"]),
    ("endpoint-no-host", ["--engine", "endpoint", "--endpoint", "http://"]),
    ("endpoint-newline", ["--engine", "endpoint", "--endpoint", "http://127.0.0.1:1/\nHost: x"]),
    ("endpoint-without-engine", ["--endpoint", "http://127.0.0.1:1"]),
]


@pytest.mark.parametrize("args", [c[1] for c in PROBE_ARGS], ids=[c[0] for c in PROBE_ARGS])
def test_hostile_probe_arguments(args):
    base = ["-m", "probes", "run"] + ([] if "--engine" in args else ["--engine", "llama.cpp"])
    line = bounded(base + args).one_line_error(2)
    assert line.startswith("error:"), line


def test_report_out_into_places_it_cannot_write(tmp_path):
    a = answers_with_path(tmp_path, "/nonexistent")  # never read: --out is checked first
    for out, fragment in ((tmp_path / "missing" / "r.md", "does not exist"), (tmp_path, "directory"),
                          (tmp_path / "r.txt", ".md or .pdf"), ("/proc/r.pdf", "cannot write")):
        args = ["-m", "advisor", "report", "--answers", str(a), "--out", str(out)]
        if out == "/proc/r.pdf":  # past the checks (root may write anywhere): the write itself fails
            args[4] = str(_answers(tmp_path, "concurrency: 1\nhardware: {gpu_vendor: none}\n"))
        line = bounded(args).one_line_error(2)
        assert fragment in line, line
    assert not list(tmp_path.glob(".report-*")), "a temporary file was left behind"


def test_hostile_probe_result_files(tmp_path):
    a = _answers(tmp_path, "concurrency: 1\nhardware: {gpu_vendor: none}\n")
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(65 << 20)  # sparse: claims 65 MB
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"engine": "<b>x</b>", "status": "maybe"}))
    for p, fragment in ((big, "too large"), (deep, "not a probe result"), (wrong, "not a probe result"),
                        (tmp_path, "not found")):
        line = bounded(["-m", "advisor", "report", "--answers", str(a), "--probe", str(p),
                        "--out", str(tmp_path / "r.md")]).one_line_error(2)
        assert fragment in line, line


@pytest.mark.skipif(shutil.which("pdfimages") is None, reason="poppler-utils (pdfimages) is not installed")
def test_a_model_named_like_html_embeds_nothing_in_the_pdf(tmp_path):
    """The GGUF's general.name is `<img src='…/secret.png'>`: the PDF lists only our charts, and the Markdown
    carries the name as text, not as a tag."""
    from PIL import Image

    secret = tmp_path / "secret.png"
    Image.new("RGB", (40, 40), "red").save(secret)
    reports = {}
    for label, name in (("benign", "tiny model"), ("hostile", f"<img src='{secret}'><script>alert(1)</script>")):
        d = tmp_path / label
        d.mkdir()
        model = gguf_file(d / "m.gguf", kvs=llama_kvs(**{"general.name": kv("general.name", STRING, gstr(name))}))
        a = answers_with_path(d, model)
        for ext in ("md", "pdf"):
            res = bounded(["-m", "advisor", "report", "--answers", str(a), "--out", str(d / f"r.{ext}")],
                          hard_limit_s=120)
            assert res.rc == 0, res.err
        reports[label] = d
    md = (reports["hostile"] / "r.md").read_text(encoding="utf-8")
    assert "<img" not in md and "<script" not in md
    assert "&lt;img" in md or "\\<img" in md  # the name is shown, escaped

    def images(pdf) -> list[str]:
        out = subprocess.run(["pdfimages", "-list", str(pdf)], capture_output=True, text=True, check=True).stdout
        return [ln.split()[3:6] for ln in out.splitlines()[2:] if ln.strip()]  # type, width, height

    assert images(reports["hostile"] / "r.pdf") == images(reports["benign"] / "r.pdf")
    assert ["image", "40", "40"] not in images(reports["hostile"] / "r.pdf")


def _bomb_yaml() -> bytes:
    out = [b"a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 16):  # 10 ** 16 leaves if expanded
        prev, name = chr(96 + i), chr(97 + i)
        out.append(f"{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, "
                   f"*{prev}]".encode())
    return b"\n".join(out) + b"\n"


@pytest.mark.parametrize("name,body,fragment", [
    ("huge.json", None, "MiB"),  # 100 MB, refused by its size before it is read
    ("bomb.yaml", _bomb_yaml(), "not a result of"),
    ("deep.json", b"[" * 200_000 + b"]" * 200_000, "nested"),
    ("nan.json", b'{"model_id": "m", "num_prompts": 4, "completed": 4, "mean_ttft_ms": NaN}', "NaN"),
    ("negative.json", json.dumps({"model_id": "m", "num_prompts": 4, "completed": 4, "max_concurrency": 2,
                                  "mean_ttft_ms": -3.0, "output_throughput": 5.0}).encode(), "cannot be a measurement"),
    ("answers.yaml", b"concurrency: 4\nmodel: {name: llama-3.1-8b}\n", "not a result of"),
    ("binary.json", bytes(range(256)) * 64, "not text"),
])
def test_hostile_benchmark_files_are_one_line_within_bounds(tmp_path, name, body, fragment):
    """`advisor plan --evidence FILE`: one line, exit 2, within 10 CPU s and 1 GB, nothing kept."""
    f = tmp_path / name
    if body is None:
        with open(f, "wb") as out:
            out.truncate(100 * 1024 * 1024)
    else:
        f.write_bytes(body)
    a = tmp_path / "a.yaml"
    a.write_text("concurrency: 4\n")
    line = bounded(["-m", "advisor", "plan", "--answers", str(a), "--evidence", str(f)], hard_limit_s=60
                   ).one_line_error(2)
    assert fragment in line, line
