"""Work items of a distributed batch and how a video is cut into segments.

Everything here is plain data and pure functions: the Ray driver and its workers exchange these objects,
and the tests check them without Ray.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Union

from facefusion_batch.targets import Target
from facefusion_batch.video.probe import VideoInfo


@dataclass(frozen=True)
class Whole:
    """A whole target (an image, or a video not worth splitting), processed as `Batch.one` does it, into
    `staged`: a hidden name next to the output that only the driver renames into place."""

    target: Target
    staged: Path
    resume_key: str | None = None


@dataclass(frozen=True)
class Segment:
    """Chunks `first` .. `last` - 1 of a video (`last` None: to its end), encoded into the shared workspace
    `ffb-<key>` where the segments of that video meet. `info` is the driver's probe of the video: a worker
    need not read the whole file again to count its packets."""

    target: Target
    key: str
    first: int
    last: int | None
    info: VideoInfo | None = None


@dataclass(frozen=True)
class Join:
    """Join every finished chunk of the shared workspace `ffb-<key>` with the original audio into `staged`."""

    target: Target
    key: str
    staged: Path
    info: VideoInfo | None = None


Item = Union[Whole, Segment, Join]


@dataclass(frozen=True)
class StorageCheck:
    """What a worker checks before it loads anything: that it sees the files the driver wrote into the
    shared directory and the output directory (`token` in `.ffb-probe-<token>`), and can read the inputs."""

    token: str
    shared: Path
    output: Path
    inputs: tuple[Path, ...]

    def probe_file(self, directory: Path) -> Path:
        return directory / f".ffb-probe-{self.token}.tmp"


@dataclass(frozen=True)
class WorkerInfo:
    """What a started worker reports: where it runs and what it loaded."""

    node: str
    pid: int
    engine: str
    models: tuple[str, ...]
    providers: tuple[str, ...]
    output_key: str
    embeddings_computed: int
    messages: tuple[str, ...]
    warnings: tuple[str, ...] = ()  # the engine's once-per-run warnings


def chunk_count(frames: int, chunk_size: int) -> int:
    """Chunks of a video by its probed frame count (the decoder decides the last one's length)."""
    return max(1, -(-frames // chunk_size))


def segment_length(chunks: int, setting: int, free_workers: int) -> int:
    """Chunks per segment: the setting when above 0, else one segment per free worker."""
    if setting > 0:
        return setting
    return max(1, math.ceil(chunks / max(1, free_workers)))


def segments(chunks: int, length: int) -> list[tuple[int, int | None]]:
    """(first, last) chunk ranges of `length` chunks covering a video; the last one runs to the end (None),
    since the decoder, not the probe, decides how many frames the video really has."""
    bounds = list(range(0, chunks, length))
    return [(first, None if first + length >= chunks else first + length) for first in bounds]


def staged_name(output: Path, token: str) -> Path:
    """A hidden sibling of `output` for one attempt. It matches the pattern the next run's start-up removes
    (`.*.tmp*` with `.ffb-`), keeps the extension for the muxer, and stays short enough for the worker's
    own temp name next to it."""
    name = f".{output.stem}.ffb-ray-{token}.tmp{output.suffix}"
    if len(name.encode()) > 200:
        digest = hashlib.sha1(output.name.encode()).hexdigest()[:16]
        name = f".ffb-ray-{digest}-{token}.tmp{output.suffix}"
    return output.with_name(name)
