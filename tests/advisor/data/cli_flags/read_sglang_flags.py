"""How sglang.yaml's `flags`, `switches`, `nargs` and `values` were read (run by hand when SGLang's pin moves; no test
runs it):

    pip download sglang==0.5.23 --no-deps -d /tmp/sgl && unzip -q -o /tmp/sgl/sglang-*.whl -d /tmp/sgl/x
    pip install --target /tmp/sgl/deps msgspec
    PYTHONPATH=/tmp/sgl/deps python tests/advisor/data/cli_flags/read_sglang_flags.py /tmp/sgl/x

It prints the table's data as JSON. SGLang 0.5.23 registers its server flags from the `A[T, help]` / `A[T, Arg(...)]`
fields of the namespace classes in sglang/srt/arg_groups/fields/*.py (arg_utils.add_cli_args_from_dataclass), then a
few by hand in ServerArgs.add_cli_args. The package cannot be imported whole without its dependencies (orjson, IPython,
torch, …), so this runs add_cli_args_from_dataclass on each namespace class with the package __init__s bypassed and
the few heavy modules the field files import stubbed (their names only matter as types), and reads the hand-registered
flags from add_cli_args's source."""
from __future__ import annotations

import argparse
import ast
import importlib
import json
import pkgutil
import sys
import types


class _Any(type):
    """A stand-in type: any attribute is another stand-in, and it iterates as empty (choices lists)."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Any(name, (), {})

    def __iter__(cls):
        return iter(())


class _Stub(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return [] if name.isupper() and name.endswith("MODULES") else _Any(name, (), {})


def main(root: str) -> dict:
    sys.path.insert(0, root)
    for name, sub in (("sglang", "sglang"), ("sglang.srt", "sglang/srt")):  # skip the package __init__s
        m = types.ModuleType(name)
        m.__path__ = [f"{root}/{sub}"]
        sys.modules[name] = m
    for name in ("sglang.srt.utils", "sglang.srt.utils.common", "sglang.srt.lora", "sglang.srt.lora.lora_registry",
                 "sglang.srt.model_executor", "sglang.srt.model_executor.cuda_graph_config"):
        sys.modules[name] = _Stub(name)
    from sglang.srt.arg_groups.arg_utils import add_cli_args_from_dataclass
    import sglang.srt.arg_groups.fields as fields

    flags: list[str] = ["-h", "--help"]  # argparse's own
    switches: list[str] = ["-h", "--help"]
    info: dict[str, dict] = {}
    for mi in pkgutil.iter_modules(fields.__path__):
        mod = importlib.import_module(f"sglang.srt.arg_groups.fields.{mi.name}")
        for obj in vars(mod).values():
            if isinstance(obj, type) and getattr(obj, "_NS_PATH", None) and obj.__module__ == mod.__name__:
                p = argparse.ArgumentParser(add_help=False)
                add_cli_args_from_dataclass(p, obj)
                for a in p._actions:
                    for o in a.option_strings:
                        flags.append(o)
                        if a.nargs == 0:
                            switches.append(o)
                        info[o] = {"nargs": a.nargs, "type": getattr(a.type, "__name__", None) if a.type else None,
                                   "choices": [str(c) for c in a.choices] if a.choices else None}
    tree = ast.parse(open(f"{root}/sglang/srt/server_args.py", encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "add_cli_args":
            for c in ast.walk(node):
                if isinstance(c, ast.Call) and getattr(c.func, "attr", "") == "add_argument":
                    action = next((k.value for k in c.keywords if k.arg == "action"), None)
                    switch = (isinstance(action, ast.Constant) and action.value in ("store_true", "store_false")) or \
                        (isinstance(action, ast.Name) and "StoreTrue" in action.id)
                    for a in c.args:
                        if isinstance(a, ast.Constant):
                            flags.append(a.value)
                            if switch:
                                switches.append(a.value)
    nargs = {f: i["nargs"] for f, i in info.items() if i["nargs"] not in (None, 0)}
    return {"flags": flags, "switches": switches, "nargs": nargs, "info": info}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1]), indent=1))
