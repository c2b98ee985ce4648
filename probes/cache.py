"""The user cache dir for generated artefacts (HF folders, ONNX exports, the machine bench).

Its own module, free of engine imports, so that advisor can share it without reaching an engine.
"""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    env = os.environ.get("INFERENCE_ADVISOR_CACHE")
    if env:
        d = Path(env)
    else:
        try:
            from platformdirs import user_cache_dir

            d = Path(user_cache_dir("inference-advisor"))
        except ImportError:
            d = Path.home() / ".cache" / "inference-advisor"
    d.mkdir(parents=True, exist_ok=True)
    return d
