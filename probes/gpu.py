"""What the probe child knows of the GPU it runs on: NVML's name for an index (no engine import, no CUDA init)."""
from __future__ import annotations


def nvml_name(index: int = 0) -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(index))
            return name.decode() if isinstance(name, bytes) else str(name)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no driver, no library: not an NVIDIA GPU we can name
        return None


def cuda_device(index: int = 0) -> str:
    """How a result names a CUDA device: "cuda:0 NVIDIA H200" (the verdict reads the class and the model)."""
    name = nvml_name(index)
    return f"cuda:{index} {name}" if name else f"cuda:{index}"
