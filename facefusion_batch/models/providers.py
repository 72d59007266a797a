"""Which ONNX Runtime execution providers really load here, and what to install when one does not.

onnxruntime-gpu lists CUDA and TensorRT even where no GPU or CUDA library is present, and a session asked
for them falls back to CPU quietly (logging the reason from C++), so each provider is tried once per process
on a one-node model. Used by the session pool (to pass only providers that load) and by `ffb detect-gpus`.
"""
from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

CPU, CUDA, TENSORRT = "CPUExecutionProvider", "CUDAExecutionProvider", "TensorrtExecutionProvider"
ORT_NAMES: Mapping[str, str] = {"cpu": CPU, "cuda": CUDA, "tensorrt": TENSORRT}  # settings name -> ONNX Runtime's
NOT_BUILT_IN = "not in this ONNX Runtime build"


def ort():
    """Import onnxruntime with its own log at errors only (what fails to load is captured where it is tried)."""
    from facefusion_batch import interrupts

    with interrupts.deferred():  # a signal inside its C initialisation would become an ImportError
        import onnxruntime

    onnxruntime.set_default_logger_severity(3)
    return onnxruntime


@dataclass(frozen=True)
class ProviderCheck:
    """The providers asked for (settings names such as 'cuda') split into those that load and those that don't.

    `kept` is in the order asked and always ends with 'cpu'; `dropped` maps each other one to why not.
    """

    kept: tuple[str, ...]
    dropped: Mapping[str, str]


def check_providers(requested: Sequence[str], device_id: int) -> ProviderCheck:
    """Which of the requested providers really load on GPU `device_id` (each tried once per process)."""
    kept: list[str] = []
    dropped: dict[str, str] = {}
    for name in dict.fromkeys([*requested, "cpu"]):
        error = None if name == "cpu" else provider_error(ORT_NAMES[name], device_id)
        if error is None:
            kept.append(name)
        else:
            dropped[name] = error
    kept.remove("cpu")
    return ProviderCheck((*kept, "cpu"), dropped)


@functools.lru_cache(maxsize=None)
def provider_error(provider: str, device_id: int) -> Optional[str]:
    """None if ONNX Runtime's `provider` loads on GPU `device_id` here; else why not, in one line.

    Cached for the process: what a provider needs (its libraries, the GPU) does not come and go during a run.
    """
    rt = ort()
    if provider not in rt.get_available_providers():
        return NOT_BUILT_IN
    if provider == CPU:
        return _probe(rt, _probe_model(), provider)
    preload_cuda_libraries()
    return _probe(rt, _probe_model(), provider, {"device_id": str(device_id)})


@functools.lru_cache(maxsize=None)
def preload_cuda_libraries() -> None:
    """Load the CUDA and cuDNN libraries of NVIDIA's PyPI wheels (`pip install 'onnxruntime-gpu[cuda,cudnn]'`)
    where ONNX Runtime can find them: it does not look in site-packages by itself.

    `onnxruntime.preload_dlls` (1.21 and later) prints what it can't find on stdout, which belongs to --json;
    a missing library shows anyway when the provider is tried, so its output is dropped.
    """
    rt = ort()
    if not hasattr(rt, "preload_dlls"):
        return
    with contextlib.redirect_stdout(io.StringIO()), _stderr_into([]):
        try:
            rt.preload_dlls()
        except Exception:  # nothing to preload, or a directory it expects is missing: the probe says what fails
            pass


_MISSING_LIBRARY = re.compile(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file")
_CUDA_LIBRARY = re.compile(r"^lib(?:cu|nvrtc|nvJitLink)")


def fix_for(name: str, error: str, ort_version: str) -> str:
    """One line for a provider that does not load: what is missing and the command that installs it."""
    if error == NOT_BUILT_IN:
        return (f"{name} is not in this ONNX Runtime build: pip uninstall onnxruntime && pip install "
                f"'onnxruntime-gpu[cuda,cudnn]'")
    missing = _MISSING_LIBRARY.search(error)
    if missing and _CUDA_LIBRARY.match(missing.group(1)):
        also = "; TensorRT's own libraries are needed too" if name == "tensorrt" else ""
        return (f"{name} does not load ({missing.group(1)} not found): pip install "
                f"'onnxruntime-gpu[cuda,cudnn]=={ort_version}' installs CUDA and cuDNN from PyPI "
                f"(in an ffb checkout: pip install -e '.[cuda]'){also}")
    if missing:
        return (f"{name} does not load ({missing.group(1)} not found): install that library (TensorRT: NVIDIA's "
                f"TensorRT for the CUDA of onnxruntime-gpu {ort_version}) and put its directory on "
                f"LD_LIBRARY_PATH")
    return f"{name} does not load ({error}); see ffb detect-gpus"


def _probe_model() -> bytes:
    """A one-node model (y = Identity(x), x a float[1]) in ONNX's wire format, old enough for any runtime."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "ffb_probe", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def _probe(rt: Any, model: bytes, provider: str, options: Optional[dict[str, str]] = None) -> Optional[str]:
    """None if a session with `provider` keeps it first; else why not.

    ONNX Runtime doesn't raise when CUDA fails to load: it logs the reason from C++ to fd 2 and quietly
    falls back to CPU. So fd 2 is captured, and `enable_fallback=0` turns the Python-level retry (which
    prints to stdout) into an exception.
    """
    providers: list[Any] = [provider] if provider == CPU else [(provider, options or {}), CPU]
    log: list[str] = []
    error: Optional[BaseException] = None
    with _stderr_into(log):
        try:
            active = rt.InferenceSession(model, providers=providers, enable_fallback=0).get_providers()
        except Exception as exc:  # any failure means "not loadable"; its text is kept as the reason
            error, active = exc, []
    if active and active[0] == provider:
        return None
    return _reason("".join(log), error)


@contextlib.contextmanager
def _stderr_into(sink: list[str]) -> Iterator[None]:
    """Send fd 2 to a temporary file for the duration, then append what was written to `sink`."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 (a detached process): nothing to capture
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            sink.append(capture.read().decode("utf-8", "replace"))


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LOG_PREFIX = re.compile(r"^.*?\[[EWF]:onnxruntime:[^\]]*\]\s*")
_SOURCE_PREFIX = re.compile(r"^\S+\.(?:cc|h|cpp):\d+\s+[^(]*\([^)]*\)\s*")
_LIBRARY_PATH = re.compile(r"/\S*/(lib[\w.+-]+\.so[\w.]*)")


def _reason(log: str, error: Optional[BaseException]) -> str:
    """One readable line from ONNX Runtime's log or exception: 'Failed to load library ... with error: ...'."""
    lines = [line.strip() for text in (log, str(error or "")) for line in _ANSI.sub("", text).splitlines()]
    failures = [line.split(" : FAIL : ", 1)[1] for line in lines if " : FAIL : " in line]
    logged = [_LOG_PREFIX.sub("", line) for line in lines if _LOG_PREFIX.match(line)]
    raised = [_SOURCE_PREFIX.sub("", line) for line in str(error or "").splitlines() if line.strip()]
    best = (failures or raised or logged or [f"ONNX Runtime fell back to {CPU}"])[0]
    best = _LIBRARY_PATH.sub(r"\1", best).strip()
    return best if len(best) <= 300 else best[:297] + "..."
