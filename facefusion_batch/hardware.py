"""What GPUs and ONNX Runtime providers this machine has, for `ffb detect-gpus`.

nvidia-smi says which NVIDIA GPUs exist and how busy they are; ONNX Runtime says which providers it was built
with. Neither alone answers "will ffb run on the GPU": onnxruntime-gpu lists CUDA and TensorRT even where no GPU
or CUDA library is present, so each provider is also tried on a one-node model.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from facefusion_batch.errors import FfbError

CPU, CUDA, TENSORRT = "CPUExecutionProvider", "CUDAExecutionProvider", "TensorrtExecutionProvider"
PROBED_PROVIDERS: tuple[str, ...] = (TENSORRT, CUDA, CPU)
ORT_NAMES: Mapping[str, str] = {"cpu": CPU, "cuda": CUDA, "tensorrt": TENSORRT}  # settings name -> ONNX Runtime's
NOT_BUILT_IN = "not in this ONNX Runtime build"
_NOT_A_VALUE = {"", "n/a", "[n/a]", "not supported", "[not supported]", "unknown error", "[unknown error]"}
_NUMBER = re.compile(r"\s*(-?\d+(?:\.\d+)?)")


class HardwareError(FfbError):
    """nvidia-smi's report can't be read."""


@dataclass(frozen=True)
class Gpu:
    """One NVIDIA GPU as nvidia-smi reports it; None where it says N/A or leaves the field out.

    `index` is nvidia-smi's index (position in its output, PCI bus order).
    """

    index: int
    name: str
    uuid: Optional[str]
    pci_bus_id: Optional[str]
    memory_total_mib: Optional[int]
    memory_free_mib: Optional[int]
    utilisation_percent: Optional[int]
    driver_version: Optional[str]
    cuda_version: Optional[str]
    temperature_c: Optional[float] = None
    power_draw_w: Optional[float] = None


@dataclass(frozen=True)
class ProviderReport:
    """ONNX Runtime providers: built in (`installed`) and actually working here (`loadable`).

    `errors` holds, for each probed provider that is not loadable, why.
    """

    version: str
    installed: tuple[str, ...]
    loadable: tuple[str, ...]
    errors: Mapping[str, str] = field(default_factory=dict)


def parse_nvidia_smi_xml(text: str) -> list[Gpu]:
    """The GPUs in `nvidia-smi -q -x` output, in nvidia-smi's order. Raises HardwareError on bad XML."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise HardwareError(f"nvidia-smi output is not valid XML: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise HardwareError(f"nvidia-smi output has root <{root.tag}>, expected <nvidia_smi_log>")
    driver, cuda = _text(root, "driver_version"), _text(root, "cuda_version")
    return [_gpu(index, element, driver, cuda) for index, element in enumerate(root.findall("gpu"))]


def _gpu(index: int, element: ElementTree.Element, driver: Optional[str], cuda: Optional[str]) -> Gpu:
    # Power moved from <power_readings> (before 535) to <gpu_power_readings>, and <power_draw> became
    # <instant_power_draw>/<average_power_draw> in newer drivers.
    power = next((value for path in ("gpu_power_readings/power_draw", "gpu_power_readings/instant_power_draw",
                                     "gpu_power_readings/average_power_draw", "power_readings/power_draw")
                  if (value := _number(element, path)) is not None), None)
    return Gpu(
        index=index,
        name=_text(element, "product_name") or "unknown NVIDIA GPU",
        uuid=_text(element, "uuid"),
        pci_bus_id=element.get("id") or _text(element, "pci/pci_bus_id"),
        memory_total_mib=_integer(element, "fb_memory_usage/total"),
        memory_free_mib=_integer(element, "fb_memory_usage/free"),
        utilisation_percent=_integer(element, "utilization/gpu_util"),
        driver_version=driver,
        cuda_version=cuda,
        temperature_c=_number(element, "temperature/gpu_temp"),
        power_draw_w=power,
    )


def _text(element: ElementTree.Element, path: str) -> Optional[str]:
    text = (element.findtext(path) or "").strip()
    return None if text.lower() in _NOT_A_VALUE else text


def _number(element: ElementTree.Element, path: str) -> Optional[float]:
    """The leading number of a field such as '81559 MiB', '3 %' or '70.45 W'; None for N/A and the like."""
    match = _NUMBER.match(_text(element, path) or "")
    return float(match.group(1)) if match else None


def _integer(element: ElementTree.Element, path: str) -> Optional[int]:
    value = _number(element, path)
    return None if value is None else int(value)


def query_nvidia_smi(binary: Optional[str] = None, timeout: float = 10) -> tuple[list[Gpu], Optional[str]]:
    """Run `nvidia-smi -q -x`: (gpus, None), or ([], why not) when it is missing, fails or finds no GPU.

    `binary` is the nvidia-smi to run; None looks it up on PATH. Never raises for "no GPU".
    """
    path = binary or shutil.which("nvidia-smi")
    if path is None:
        return [], "nvidia-smi not found on PATH (no NVIDIA driver installed here)"
    try:
        done = subprocess.run([path, "-q", "-x"], capture_output=True, text=True, errors="replace",
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return [], f"nvidia-smi did not answer within {timeout:g} s"
    except OSError as exc:
        return [], f"nvidia-smi could not be run: {exc}"
    if done.returncode != 0:
        # nvidia-smi prints "couldn't communicate with the NVIDIA driver" and the like on stdout, not stderr.
        lines = (done.stderr.strip() or done.stdout.strip() or "no message").splitlines()
        return [], f"nvidia-smi failed (exit {done.returncode}): {lines[0].strip()}"
    try:
        gpus = parse_nvidia_smi_xml(done.stdout)
    except HardwareError as exc:
        return [], str(exc)
    return (gpus, None) if gpus else ([], "nvidia-smi lists no GPU")


def onnxruntime_providers() -> ProviderReport:
    """Which ONNX Runtime providers are built in, and which of TensorRT, CUDA and CPU really load here."""
    from facefusion_batch.models.sessions import ort

    rt = ort()  # sets the logger to errors only; the errors themselves are captured below
    installed = tuple(rt.get_available_providers())
    loadable: list[str] = []
    errors: dict[str, str] = {}
    for provider in PROBED_PROVIDERS:
        error = provider_error(provider, 0)
        if error is None:
            loadable.append(provider)
        else:
            errors[provider] = error
    return ProviderReport(rt.__version__, installed, tuple(loadable), errors)


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
    from facefusion_batch.models.sessions import ort

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
    from facefusion_batch.models.sessions import ort

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
        return (f"{name} does not load ({missing.group(1)} not found): pip install "
                f"'onnxruntime-gpu[cuda,cudnn]=={ort_version}' installs CUDA and cuDNN from PyPI "
                f"(in an ffb checkout: pip install -e '.[cuda]')")
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


def best_device(gpus: list[Gpu]) -> Optional[Gpu]:
    """The GPU with the most free memory; ties go to lower utilisation, then the lower index."""
    if not gpus:
        return None

    def key(gpu: Gpu) -> tuple[int, int, int]:
        free = gpu.memory_free_mib if gpu.memory_free_mib is not None else -1
        busy = gpu.utilisation_percent if gpu.utilisation_percent is not None else 101
        return (-free, busy, gpu.index)

    return min(gpus, key=key)


def report(gpus: list[Gpu], reason: Optional[str], providers: ProviderReport) -> dict[str, Any]:
    """The JSON-ready findings of `ffb detect-gpus`, ending in one line of advice."""
    best = best_device(gpus)
    notes = []
    if len(gpus) > 1:
        notes.append("CUDA numbers GPUs fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID is set; set it so "
                     "--execution-device-id means the nvidia-smi index shown here")
    return {
        "gpus": [dataclasses.asdict(gpu) for gpu in gpus],
        "nvidia_smi": {"status": "ok" if reason is None else "unavailable", "reason": reason},
        "providers": {"onnxruntime_version": providers.version, "installed": list(providers.installed),
                      "loadable": list(providers.loadable), "errors": dict(providers.errors)},
        "best_device": None if best is None else best.index,
        "advice": _advice(best, providers),
        "notes": notes,
    }


def _advice(best: Optional[Gpu], providers: ProviderReport) -> str:
    cuda = CUDA in providers.loadable
    on_cpu = "ffb runs on CPU (execution_providers = cpu)"
    if best is not None and cuda:
        extra = " ('tensorrt cuda cpu' also loads; its first run builds engines slowly)" \
            if TENSORRT in providers.loadable else ""
        return f"use --execution-providers 'cuda cpu' --execution-device-id {best.index}{extra}"
    if best is not None and CUDA not in providers.installed:
        return f"NVIDIA GPU found but this ONNX Runtime has no CUDA provider: pip install onnxruntime-gpu; " \
               f"until then {on_cpu}"
    if best is not None:
        return f"NVIDIA GPU found but ONNX Runtime's CUDA provider does not load (see the CUDA error): install " \
               f"the CUDA and cuDNN libraries onnxruntime-gpu {providers.version} needs with pip install " \
               f"'onnxruntime-gpu[cuda,cudnn]=={providers.version}' (in an ffb checkout: pip install -e " \
               f"'.[cuda]'); until then {on_cpu}"
    if cuda:
        return "nvidia-smi is unavailable but CUDA loads: use --execution-providers 'cuda cpu' " \
               "--execution-device-id 0"
    return f"no NVIDIA GPU found: {on_cpu}"


def render_text(findings: dict[str, Any]) -> str:
    """`report`'s findings as plain text for a terminal, one fact a line."""
    lines = ["NVIDIA GPUs (nvidia-smi):"]
    gpus = findings["gpus"]
    if gpus:
        first = gpus[0]
        lines[0] = f"NVIDIA GPUs (nvidia-smi; driver {first['driver_version'] or '?'}, " \
                   f"CUDA {first['cuda_version'] or '?'}):"
        lines += [f"  {_gpu_line(gpu)}" for gpu in gpus]
    else:
        lines.append(f"  none: {findings['nvidia_smi']['reason'] or 'no GPU listed'}")
    providers = findings["providers"]
    lines.append(f"ONNX Runtime {providers['onnxruntime_version']} providers:")
    lines.append(f"  installed: {', '.join(providers['installed']) or 'none'}")
    lines.append(f"  loadable:  {', '.join(providers['loadable']) or 'none'}")
    lines += [f"  {name} does not load: {why}" for name, why in providers["errors"].items()]
    best = findings["best_device"]
    lines.append(f"best device: {'none' if best is None else best}")
    lines += [f"note: {note}" for note in findings["notes"]]
    lines.append(f"advice: {findings['advice']}")
    return "\n".join(lines) + "\n"


def _gpu_line(gpu: Mapping[str, Any]) -> str:
    def shown(value: Any, unit: str) -> str:
        return "?" if value is None else f"{value:g}{unit}"

    return (f"[{gpu['index']}] {gpu['name']}: {shown(gpu['memory_free_mib'], '')} of "
            f"{shown(gpu['memory_total_mib'], ' MiB')} free, utilisation {shown(gpu['utilisation_percent'], '%')}, "
            f"{shown(gpu['temperature_c'], ' C')}, {shown(gpu['power_draw_w'], ' W')}"
            f"{'' if gpu['pci_bus_id'] is None else ', bus ' + gpu['pci_bus_id']}")
