"""Every file we read is an input: the machine bench, the cache dir itself, and the conversion caches.

A machine_bench.json that is a FIFO, a link to /dev/zero or holds NaN is measured again and replaced; a cache dir
that is a file is one line naming the variable; a conversion folder that is incomplete, truncated or does not load
is built again (once), two builders of one key build it once, and no temp folder outlives its builder.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from tests.hostile.kit import RSS_LIMIT_MB, ROOT, bounded

THIS_MACHINE = str(ROOT / "examples" / "this-machine-smollm2.yaml")  # no hardware block: plans measure this CPU


# ---------------------------------------------------------------- machine_bench.json

def _no_nan(text: str):
    def refuse(const):
        raise AssertionError(f"{const} in the JSON output")

    return json.loads(text, parse_constant=refuse)


def _remeasured(cache: Path):
    """The file is now a regular one with this CPU's fresh, finite, positive figures."""
    from advisor.planner.machine_bench import MachineBench

    p = cache / "machine_bench.json"
    assert p.is_file() and not p.is_symlink(), "the refused file was not replaced"
    bench = MachineBench.model_validate_json(p.read_bytes())
    assert math.isfinite(bench.memory_bandwidth_gb_s) and bench.memory_bandwidth_gb_s > 0
    assert math.isfinite(bench.fp32_gflops) and bench.fp32_gflops > 0
    return bench


def _plan(cmd: str, cache: Path, hard_limit_s: float = 30.0):
    return bounded(["-m", "advisor", cmd, "--answers", THIS_MACHINE, "--format", "json"], hard_limit_s=hard_limit_s,
                   env={"INFERENCE_ADVISOR_CACHE": str(cache)})


def _measured_target(out: str) -> dict:
    data = _no_nan(out)
    target = data["target"]
    assert target["cpu_measured"] is True and target["cpu_bandwidth_gb_s"] > 0 and target["cpu_gflops"] > 0
    return target


@pytest.mark.parametrize("cmd", ["plan", "recommend"])
def test_a_fifo_machine_bench_is_replaced_never_opened(tmp_path, cmd):
    # before: read_text() on the FIFO waited for a writer forever (every plan for this machine, every page)
    os.mkfifo(tmp_path / "machine_bench.json")
    o = _plan(cmd, tmp_path)
    assert o.rc == 0, o.err[-600:]
    assert not o.killed  # it never waited on the FIFO (it re-measures the machine, which is its own cost)
    _measured_target(o.out)
    _remeasured(tmp_path)


def test_a_machine_bench_linked_to_dev_zero_is_not_read(tmp_path):
    # before: read_text() read /dev/zero until memory ran out (3 GB in 4 s in the audit)
    (tmp_path / "machine_bench.json").symlink_to("/dev/zero")
    reader = bounded(["-c", "from advisor.planner import machine_bench as m; assert m.cached() is None"],
                     hard_limit_s=20, env={"INFERENCE_ADVISOR_CACHE": str(tmp_path)})
    assert reader.rc == 0, reader.err[-600:]
    assert reader.within_bounds(), (reader.cpu_seconds, reader.peak_rss_mb)

    o = _plan("plan", tmp_path, hard_limit_s=20)
    assert o.rc == 0, o.err[-600:]
    assert not o.killed  # /dev/zero was never read (the reader above is bounded); the re-measure is its own cost
    bench = _remeasured(tmp_path)
    from advisor.planner.machine_bench import ARRAY_MIB

    # the re-measurement itself holds one ARRAY_MIB array per thread: the bound is the suite's, plus those (twice)
    assert o.peak_rss_mb < RSS_LIMIT_MB + 2 * ARRAY_MIB * bench.threads, f"peak RSS {o.peak_rss_mb:.0f} MB"
    _measured_target(o.out)


@pytest.mark.parametrize("field,value", [("memory_bandwidth_gb_s", float("nan")), ("memory_bandwidth_gb_s", 0),
                                         ("fp32_gflops", -1.0), ("fp32_gflops", float("inf"))])
def test_a_machine_bench_with_figures_that_are_not_finite_and_positive_is_measured_again(tmp_path, field, value):
    from advisor.planner import machine_bench

    # this CPU and this method: the old reader trusted every figure in such a file
    good = {"cpu_model": machine_bench._cpu_model(), "threads": 2, "memory_bandwidth_gb_s": 20.0,
            "fp32_gflops": 100.0, "measured_at": "2026-01-01T00:00:00+00:00",
            "method": machine_bench.MachineBench.model_fields["method"].default}
    (tmp_path / "machine_bench.json").write_text(json.dumps({**good, field: value}))  # NaN / Infinity literals
    o = _plan("plan", tmp_path)
    assert o.rc == 0, o.err[-600:]
    assert "NaN" not in o.out and "Infinity" not in o.out
    target = _measured_target(o.out)
    assert target["cpu_bandwidth_gb_s"] == _remeasured(tmp_path).memory_bandwidth_gb_s
    assert not o.killed  # the re-measure is the plan's own cost (a few CPU seconds and its arrays)


# ---------------------------------------------------------------- the cache dir itself

def test_a_cache_dir_that_is_a_file_is_one_line_naming_the_variable(tmp_path):
    f = tmp_path / "cache"
    f.write_text("not a folder")
    o = bounded(["-m", "advisor", "recommend", "--answers", THIS_MACHINE], env={"INFERENCE_ADVISOR_CACHE": str(f)})
    line = o.one_line_error(2)
    assert line == f"error: INFERENCE_ADVISOR_CACHE={f} is a file, not a directory"


def test_a_default_cache_dir_that_is_a_file_says_which_variable_moves_it(tmp_path):
    (tmp_path / "inference-advisor").write_text("not a folder")  # platformdirs: $XDG_CACHE_HOME/inference-advisor
    o = bounded(["-m", "advisor", "plan", "--answers", THIS_MACHINE],
                env={"INFERENCE_ADVISOR_CACHE": "", "XDG_CACHE_HOME": str(tmp_path)})
    line = o.one_line_error(2)
    assert str(tmp_path / "inference-advisor") in line and "INFERENCE_ADVISOR_CACHE" in line and "file" in line


def test_a_probe_with_a_cache_dir_that_is_a_file_reports_that_line(tmp_path):
    f = tmp_path / "cache"
    f.write_text("not a folder")
    o = bounded(["-m", "probes", "run", "--engine", "pytorch", "--requests", "1", "--format", "json"],
                env={"INFERENCE_ADVISOR_CACHE": str(f)})
    line = o.one_line_error(2)  # a user's setting, refused before any engine process starts
    assert line == f"error: INFERENCE_ADVISOR_CACHE={f} is a file, not a directory"
    assert o.within_bounds(), (o.cpu_seconds, o.peak_rss_mb)


# ---------------------------------------------------------------- conversion caches
#
# The real GGUF → HF conversion of the bundled model takes ~52 s on 2 cores (and the ONNX export ~15 s), so these
# cases run probes.models.gguf_to_hf and the PyTorch backend's load for real with a stand-in `transformers` that
# writes (and reads) a small folder at once: what is under test is the cache (marker, lock, temp folders, rebuild),
# not transformers. The ONNX case at the end runs the real exporter and onnxruntime-genai on a tiny model.

FAKE_TRANSFORMERS = textwrap.dedent('''
    """A stand-in for transformers: builds count in $FAKE_BUILD_LOG; weights starting b"BAD" do not load."""
    import os
    import time
    from pathlib import Path


    class _Obj:
        pass


    class _Model:
        def __init__(self, cfg=None):
            self.config = _Obj()
            self.config.max_position_embeddings = 512
            self.generation_config = _Obj()
            self.generation_config.eos_token_id = 2

        def state_dict(self):
            return {}

        def load_state_dict(self, sd):
            pass

        def to(self, dev):
            return self

        def eval(self):
            return self

        def save_pretrained(self, d):  # as transformers does, it makes the folder
            Path(d).mkdir(parents=True, exist_ok=True)
            with open(os.environ["FAKE_BUILD_LOG"], "a") as f:
                f.write(f"{os.getpid()}\\n")
            started = os.environ.get("FAKE_WAIT_FOR")  # a folder: wait until two builders have started
            if started:
                t0 = time.monotonic()
                while len(os.listdir(started)) < 2 and time.monotonic() - t0 < 10:
                    time.sleep(0.05)
                time.sleep(0.5)  # the other one reaches the lock meanwhile
            time.sleep(float(os.environ.get("FAKE_BUILD_S", "0")))
            Path(d, "config.json").write_text('{"model_type": "llama"}')
            bad = b"BAD" if os.environ.get("FAKE_ALWAYS_BAD") else b"OK!"
            Path(d, "model.safetensors").write_bytes(bad + bytes(1 << 20))


    class _Tok:
        def save_pretrained(self, d):
            Path(d).mkdir(parents=True, exist_ok=True)
            Path(d, "tokenizer.json").write_text("{}")


    class AutoTokenizer:
        @staticmethod
        def from_pretrained(*a, **k):
            return _Tok()


    class AutoConfig:
        @staticmethod
        def from_pretrained(*a, **k):
            return _Obj()


    class AutoModelForCausalLM:
        @staticmethod
        def from_pretrained(path, **k):
            w = Path(path, "model.safetensors")
            if not k.get("gguf_file") and w.is_file() and w.read_bytes()[:3] == b"BAD":
                raise OSError(f"Unable to load weights from checkpoint file {w}")
            return _Model()
''')


@pytest.fixture
def fake_hf(tmp_path, monkeypatch):
    """(gguf, cache dir, builds()): a small GGUF-named file to convert, the cache, and how many builds ran."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "transformers.py").write_text(FAKE_TRANSFORMERS)
    import importlib.util

    spec = importlib.util.spec_from_file_location("transformers", fake / "transformers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setitem(sys.modules, "transformers", mod)
    log = tmp_path / "builds.log"
    log.touch()
    cache = tmp_path / "cache"
    monkeypatch.setenv("INFERENCE_ADVISOR_CACHE", str(cache))
    monkeypatch.setenv("FAKE_BUILD_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", f"{fake}{os.pathsep}{ROOT}")  # for the builder processes below
    gguf = tmp_path / "models" / "tiny.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF" + bytes(60))
    return gguf, cache, lambda: len(log.read_text().split())


def _hf_out(gguf: Path, cache: Path) -> Path:
    from probes.models import _key

    return cache / "hf" / f"{gguf.stem}-{_key(gguf)}"


def _temps(cache: Path) -> list[str]:
    return sorted(p.name for p in (cache / "hf").iterdir() if ".tmp" in p.name)


def _damage(out: Path, how: str) -> None:
    marker = out / ".complete.json"
    if how == "truncated":  # a file cut short after the build (a full disk, a copy that stopped)
        w = out / "model.safetensors"
        w.write_bytes(w.read_bytes()[:1000])
    elif how == "no-marker":  # a killed builder's, or one from before markers: looks whole, is not known to be
        marker.unlink(missing_ok=True)
    elif how == "marker-fifo":
        marker.unlink(missing_ok=True)
        os.mkfifo(marker)
    elif how == "marker-garbage":
        marker.write_bytes(b"[" * 100_000)


@pytest.mark.parametrize("how", ["truncated", "no-marker", "marker-fifo", "marker-garbage"])
def test_an_incomplete_conversion_is_built_again_not_reused(fake_hf, how):
    from probes.models import gguf_to_hf

    gguf, cache, builds = fake_hf
    out = gguf_to_hf(gguf, lambda *a: None)
    assert builds() == 1
    assert gguf_to_hf(gguf, lambda *a: None) == out and builds() == 1  # a complete one is reused
    _damage(out, how)
    said = []
    assert gguf_to_hf(gguf, lambda ph, msg: said.append(msg)) == out
    assert builds() == 2, "the damaged conversion was reused"
    assert (out / "model.safetensors").stat().st_size == 3 + (1 << 20)
    assert any(str(out) in m for m in said)
    assert _temps(cache) == []


def test_a_killed_builders_temp_folders_are_removed(fake_hf):
    from probes.models import gguf_to_hf

    gguf, cache, builds = fake_hf
    out = _hf_out(gguf, cache)
    out.parent.mkdir(parents=True)
    for name in (f"{out.name}.tmp-dead1", f"{out.name}.tmp"):  # this code's temp, and the older fixed name
        (out.parent / name).mkdir()
        (out.parent / name / "model.safetensors").write_bytes(bytes(1 << 20))
    gguf_to_hf(gguf, lambda *a: None)
    assert _temps(cache) == []
    (out.parent / f"{out.name}.tmp-dead2").mkdir()  # killed after the cache was complete: swept on reuse
    gguf_to_hf(gguf, lambda *a: None)
    assert _temps(cache) == [] and builds() == 1


BUILDER = textwrap.dedent('''
    import os, sys
    from pathlib import Path
    Path(sys.argv[2], str(os.getpid())).touch()  # "started"
    from probes.models import gguf_to_hf
    print(gguf_to_hf(Path(sys.argv[1]), lambda ph, msg: print(msg, file=sys.stderr)))
''')


def test_two_probes_building_one_cache_build_it_once(fake_hf, tmp_path):
    # before: both built into the same `.tmp` folder; one removed the other's, failed, and left its weights behind
    gguf, cache, builds = fake_hf
    started = tmp_path / "started"
    started.mkdir()
    env = {**os.environ, "FAKE_WAIT_FOR": str(started)}
    procs = [subprocess.Popen([sys.executable, "-c", BUILDER, str(gguf), str(started)], cwd=str(ROOT), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=30) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-600:] for _, e in outs]
    assert {o.strip() for o, _ in outs} == {str(_hf_out(gguf, cache))}
    assert builds() == 1, "both probes built the cache"
    assert any("waiting for another probe" in e for _, e in outs)
    assert _temps(cache) == []


def test_two_threads_building_one_cache_build_it_once(fake_hf, monkeypatch):
    from probes.models import gguf_to_hf

    gguf, cache, builds = fake_hf
    monkeypatch.setenv("FAKE_BUILD_S", "1")  # both threads start within it
    got, errors = [], []

    def build():
        try:
            got.append(gguf_to_hf(gguf, lambda *a: None))
        except Exception as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and len(got) == 2 and got[0] == got[1]
    assert builds() == 1 and _temps(cache) == []


def _pytorch(gguf):
    from probes.backends.pytorch_hf import PyTorchBackend
    from probes.result import ProbeSettings

    settings = ProbeSettings(engine="pytorch", extra={"device": "cpu"})
    backend = PyTorchBackend()
    model, fmt = backend.prepare(gguf, "gguf", settings, lambda *a: None)
    return backend, model, fmt, settings


def test_a_conversion_that_does_not_load_is_built_again_once(fake_hf):
    pytest.importorskip("torch")
    gguf, cache, builds = fake_hf
    backend, model, fmt, settings = _pytorch(gguf)
    w = model / "model.safetensors"
    w.write_bytes(b"BAD" + w.read_bytes()[3:])  # same size: the marker cannot see it; only loading can
    backend.load(model, fmt, settings)
    assert builds() == 2 and w.read_bytes()[:3] == b"OK!"


def test_a_conversion_that_still_does_not_load_names_its_folder(fake_hf, monkeypatch):
    pytest.importorskip("torch")
    from probes.models import ModelError

    gguf, cache, builds = fake_hf
    monkeypatch.setenv("FAKE_ALWAYS_BAD", "1")
    backend, model, fmt, settings = _pytorch(gguf)
    with pytest.raises(ModelError) as err:
        backend.load(model, fmt, settings)
    assert str(model) in str(err.value) and "\n" not in str(err.value)
    assert builds() == 2, "rebuilt once, not in a loop"


# ---------------------------------------------------------------- the real exporter

def _tiny_hf(folder: Path) -> Path:
    """A 2-layer llama with a byte-level tokenizer (no merges): exported in seconds, not the bundled model's minute."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab.update({c: i + 3 for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))})
    tk = Tokenizer(models.BPE(vocab, [], unk_token="<unk>"))
    tk.pre_tokenizer, tk.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
                            ).save_pretrained(folder)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, bos_token_id=1,
                      eos_token_id=2)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_a_truncated_onnx_export_is_exported_again_and_loads(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime_genai")
    from probes.backends.onnxruntime_genai import OnnxRuntimeBackend
    from probes.result import ProbeSettings

    monkeypatch.setenv("INFERENCE_ADVISOR_CACHE", str(tmp_path / "cache"))
    hf = _tiny_hf(tmp_path / "tiny")
    settings = ProbeSettings(engine="onnxruntime", extra={"device": "cpu"})
    model, fmt = OnnxRuntimeBackend().prepare(hf, "hf", settings, lambda *a: None)
    data = model / "model.onnx.data"
    size = data.stat().st_size
    with open(data, "r+b") as f:  # cut short, as a full disk or a killed copy leaves it
        f.truncate(size // 2)
    said = []
    backend = OnnxRuntimeBackend()
    again, fmt = backend.prepare(hf, "hf", settings, lambda ph, msg: said.append(msg))
    assert again == model and data.stat().st_size == size
    assert any("exporting" in m for m in said), "the truncated export was reused"
    backend.load(again, fmt, settings)
    assert backend.model is not None
    assert not [p for p in model.parent.iterdir() if ".tmp" in p.name]
