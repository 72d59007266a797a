"""Model calls through ONNX Runtime's IO binding: inputs that already live on the device (OrtValues) are fed
as they are, numpy inputs are copied over once, and outputs stay on the device (or come back to host memory)
as the caller asks. The same code runs on the CPU provider (device "cpu"), which is how it is tested here.

Numpy inputs are cast to the type the model declares, so a file stored in fp16 with fp16 inputs (FaceFusion's
`*_fp16` exports may keep or change their input type) is fed the same arrays as its fp32 original.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

GPU_PROVIDERS = ("CUDAExecutionProvider", "TensorrtExecutionProvider")
_NUMPY_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
                "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(uint8)": np.uint8,
                "tensor(bool)": np.bool_}


@dataclass(frozen=True)
class Device:
    """Where OrtValues live: ONNX Runtime's device type ("cuda" or "cpu") and the device index."""

    type: str = "cpu"
    id: int = 0


def device_of(session: Any, device_id: int = 0) -> Device:
    """The device a session's outputs can stay on: its GPU when its first provider is CUDA/TensorRT."""
    return Device("cuda", device_id) if session.get_providers()[0] in GPU_PROVIDERS else Device("cpu", 0)


def input_types(session: Any) -> dict[str, Any]:
    """Input name -> numpy dtype the model declares (None for a type numpy has no match for)."""
    return {i.name: _NUMPY_TYPES.get(i.type) for i in session.get_inputs()}


def upload(array: np.ndarray, device: Device) -> Any:
    """An OrtValue holding `array` on `device` (one copy to the GPU for "cuda")."""
    from facefusion_batch.models.providers import ort

    return ort().OrtValue.ortvalue_from_numpy(np.ascontiguousarray(array), device.type, device.id)


def run_bound(session: Any, feeds: Mapping[str, Any], device: Device, run_options: Any = None,
              outputs_on: Device | None = None, types: Mapping[str, Any] | None = None) -> list[Any]:
    """Run `session` with IO binding. `feeds`: numpy arrays (copied to the session's device once, cast to the
    declared type) or OrtValues (bound where they are). Returns the outputs as OrtValues on `outputs_on`
    (default `device`); `.numpy()` brings one to host memory."""
    binding = session.io_binding()
    declared = types if types is not None else input_types(session)
    for name, value in feeds.items():
        if isinstance(value, np.ndarray) or np.isscalar(value):
            wanted = declared.get(name)
            array = np.ascontiguousarray(value if wanted is None else np.asarray(value, dtype=wanted))
            if device.type == "cpu":
                binding.bind_cpu_input(name, array)
            else:
                binding.bind_ortvalue_input(name, upload(array, device))
        else:
            binding.bind_ortvalue_input(name, value)
    target = outputs_on or device
    for output in session.get_outputs():
        binding.bind_output(output.name, target.type, target.id)
    session.run_with_iobinding(binding, run_options)
    return list(binding.get_outputs())


def run_to_host(session: Any, feeds: Mapping[str, Any], device: Device, run_options: Any = None,
                names: Sequence[str] | None = None) -> list[np.ndarray]:
    """`session.run` through IO binding: the outputs as numpy arrays (all, or those in `names`)."""
    outputs = run_bound(session, feeds, device, run_options, outputs_on=Device("cpu", 0))
    if names is None:
        return [value.numpy() for value in outputs]
    order = [o.name for o in session.get_outputs()]
    return [outputs[order.index(name)].numpy() for name in names]
