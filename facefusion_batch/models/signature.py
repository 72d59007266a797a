"""Is this file the model the catalog says it is? Its graph's inputs and outputs, read straight from the
ONNX protobuf, checked against the catalog before any session is built.

The file is read through mmap and the weights are skipped by their length prefixes, so a 550 MB model is
checked in milliseconds and a truncated one is named as such (a field running past the end of the file)
instead of surfacing as a protobuf DecodeError, or, for a different but valid model, as a shape error
deep inside the first inference.
"""
from __future__ import annotations

import dataclasses
import mmap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from facefusion_batch.errors import ModelError
from facefusion_batch.models.catalog import ModelSpec, TensorSpec

if TYPE_CHECKING:
    from facefusion_batch.models.store import ModelState

# ONNX TensorProto.DataType values ffb can meet.
_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool", 10: "float16",
           11: "float64", 16: "bfloat16"}


class Damaged(ValueError):
    """The bytes are not a whole ONNX protobuf."""


@dataclass(frozen=True)
class Found:
    """A graph tensor as stored: dims are ints, or None for a symbolic/unknown dim."""

    name: str
    shape: tuple[int | None, ...] | None  # None: no shape stored
    dtype: str

    def __str__(self) -> str:
        if self.shape is None:
            return f"{self.name} (shape unknown, {self.dtype})"
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.name} ({dims}){'' if self.dtype == 'float32' else ' ' + self.dtype}"


def _varint(data: memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end:
            raise Damaged(f"the file ends inside a number at byte {pos}")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise Damaged(f"a number at byte {pos} is too long")


def _fields(data: memoryview, start: int, end: int):
    """(field number, wire type, value) of one message's fields; length-delimited values as (start, end)."""
    pos = start
    while pos < end:
        key, pos = _varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos, end)
        elif wire == 1:
            value, pos = None, pos + 8
        elif wire == 5:
            value, pos = None, pos + 4
        elif wire == 2:
            length, pos = _varint(data, pos, end)
            if pos + length > end:
                raise Damaged(f"truncated: a field at byte {pos} needs {length} bytes, {end - pos} are left")
            value, pos = (pos, pos + length), pos + length
        else:
            raise Damaged(f"not a protobuf (wire type {wire} at byte {pos})")
        if pos > end:
            raise Damaged(f"truncated at byte {end}")
        if number == 0:
            raise Damaged(f"not a protobuf (field 0 at byte {pos})")
        yield number, wire, value


def _text(data: memoryview, span: tuple[int, int]) -> str:
    return bytes(data[span[0]:span[1]]).decode("utf-8", "replace")


def _value_info(data: memoryview, span: tuple[int, int]) -> Found:
    name, shape, dtype = "", None, "unknown"
    for number, wire, value in _fields(data, *span):
        if number == 1 and wire == 2:
            name = _text(data, value)
        elif number == 2 and wire == 2:  # TypeProto
            for t_number, t_wire, t_value in _fields(data, *value):
                if t_number == 1 and t_wire == 2:  # tensor_type
                    for k_number, k_wire, k_value in _fields(data, *t_value):
                        if k_number == 1 and k_wire == 0:
                            dtype = _DTYPES.get(k_value, f"type {k_value}")
                        elif k_number == 2 and k_wire == 2:
                            shape = tuple(_dim(data, d_value) for d_number, d_wire, d_value
                                          in _fields(data, *k_value) if d_number == 1 and d_wire == 2)
    return Found(name, shape, dtype)


def _dim(data: memoryview, span: tuple[int, int]) -> int | None:
    for number, wire, value in _fields(data, *span):
        if number == 1 and wire == 0 and value > 0:
            return value
    return None


def read_signature(path: Path) -> tuple[list[Found], list[Found]]:
    """(inputs, outputs) of the ONNX graph in `path`, weights excluded; Damaged when it isn't one."""
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        if size == 0:
            raise Damaged("the file is empty")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            data = memoryview(mapped)
            try:
                return _graph_signature(data, size)
            finally:
                data.release()


def _graph_signature(data: memoryview, size: int) -> tuple[list[Found], list[Found]]:
    graph = None
    for number, wire, value in _fields(data, 0, size):
        if number == 7 and wire == 2:
            graph = value
    if graph is None:
        raise Damaged("not an ONNX model (it has no graph)")
    inputs: list[Found] = []
    outputs: list[Found] = []
    weights: set[str] = set()
    for number, wire, value in _fields(data, *graph):
        if wire != 2:
            continue
        if number == 11:
            inputs.append(_value_info(data, value))
        elif number == 12:
            outputs.append(_value_info(data, value))
        elif number == 5:  # an initializer: only its name (field 8) matters here
            weights.update(_text(data, v) for n, w, v in _fields(data, *value) if n == 8 and w == 2)
    # Old exports list every weight among the inputs too; those are not fed.
    return [i for i in inputs if i.name not in weights], outputs


def _matches(expected: TensorSpec, found: Found, by_name: bool) -> bool:
    if by_name and found.name != expected.name:
        return False
    if found.dtype != expected.dtype or found.shape is None:
        return found.shape is None and found.dtype == expected.dtype  # no stored shape: trust the names
    if len(found.shape) != len(expected.shape):
        return False
    return all(e is None or f is None or e == f for e, f in zip(expected.shape, found.shape))


def _describe(tensors: list[Found] | tuple[TensorSpec, ...]) -> str:
    parts = []
    for t in tensors:
        if isinstance(t, TensorSpec):
            dims = ",".join("?" if d is None else str(d) for d in t.shape)
            parts.append(f"{t.name} ({dims})")
        else:
            parts.append(str(t))
    return ", ".join(parts) or "none"


def check_model(spec: ModelSpec, path: Path) -> None:
    """ModelError (exit 3) naming the file, what is wrong and the fix, unless `path` holds a whole ONNX
    graph whose inputs and outputs are those of `spec`."""
    fix = f"delete it and re-download with `ffb models download {spec.name}`"
    try:
        inputs, outputs = read_signature(path)
    except Damaged as exc:
        raise ModelError(f"{path} is damaged ({exc}); {fix}") from None
    except OSError as exc:
        raise ModelError(f"{path}: can't read the model ({exc.strerror or exc}); {fix}") from None
    if not spec.inputs:
        return
    same = (len(inputs) == len(spec.inputs) and len(outputs) == len(spec.outputs)
            and all(_matches(e, f, spec.fed_by_name) for e, f in zip(spec.inputs, inputs))
            and all(_matches(e, f, False) for e, f in zip(spec.outputs, outputs)))
    if not same:
        raise ModelError(f"{path} is not {spec.name}: expected inputs {_describe(spec.inputs)} and outputs "
                         f"{_describe(spec.outputs)}; found inputs {_describe(inputs)} and outputs "
                         f"{_describe(outputs)}; {fix}")


def checked(state: ModelState) -> ModelState:
    """`state` with a present file's signature checked too: 'corrupt' when it is damaged or another model,
    for `ffb models list/verify`."""
    if state.status not in ("ok", "unverified"):
        return state
    try:
        check_model(state.spec, state.path)
    except ModelError as exc:
        detail = str(exc).split("; delete it and re-download")[0]
        return dataclasses.replace(state, status="corrupt", detail=detail)
    return state
