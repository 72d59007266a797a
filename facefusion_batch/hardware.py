"""What GPUs and ONNX Runtime providers this machine has, for `ffb detect-gpus`.

nvidia-smi says which NVIDIA GPUs exist and how busy they are; ONNX Runtime says which providers it was built
with. Neither alone answers "will ffb run on the GPU": onnxruntime-gpu lists CUDA and TensorRT even where no GPU
or CUDA library is present, so each provider is also tried on a one-node model.
"""
from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from facefusion_batch.errors import FfbError
# The provider probing lives with the models; detect-gpus shows its findings (names kept for callers).
from facefusion_batch.models.providers import (CPU, CUDA, TENSORRT, _probe_model, _reason,  # noqa: F401
                                               ort, provider_error)

PROBED_PROVIDERS: tuple[str, ...] = (TENSORRT, CUDA, CPU)
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
    rt = ort()
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
                     "--execution-device-ids means the nvidia-smi index shown here")
    return {
        "gpus": [dataclasses.asdict(gpu) for gpu in gpus],
        "nvidia_smi": {"status": "ok" if reason is None else "unavailable", "reason": reason},
        "providers": {"onnxruntime_version": providers.version, "installed": list(providers.installed),
                      "loadable": list(providers.loadable), "errors": dict(providers.errors)},
        "best_device": None if best is None else best.index,
        "advice": _advice(best, providers, gpus),
        "notes": notes,
    }


def _advice(best: Optional[Gpu], providers: ProviderReport, gpus: list[Gpu]) -> str:
    cuda = CUDA in providers.loadable
    on_cpu = "ffb runs on CPU (execution_providers = cpu)"
    if best is not None and cuda:
        extra = " ('tensorrt cuda cpu' also loads; its first run builds engines slowly)" \
            if TENSORRT in providers.loadable else ""
        if len(gpus) > 1:  # worker processes spread over every GPU (executor processes)
            ids = " ".join(str(gpu.index) for gpu in gpus)
            return (f"use --execution-providers 'cuda cpu' --executor processes --execution-device-ids {ids} "
                    f"(worker processes on every GPU; one GPU only: --execution-device-ids {best.index}){extra}")
        return f"use --execution-providers 'cuda cpu' --execution-device-ids {best.index}{extra}"
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
               "--execution-device-ids 0"
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
