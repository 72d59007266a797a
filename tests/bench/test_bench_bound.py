"""The bound a benchmark names, the GPU sampler without a GPU, and ffmpeg's hardware decoding listing."""
from __future__ import annotations

import pytest

from facefusion_batch.bench.bound import models_fps, name_bound
from facefusion_batch.bench.measure import GpuSampler
from facefusion_batch.video.ffmpeg import hardware_decoding


@pytest.mark.parametrize("limits, bound", [
    # processor path slower than decode+encode, close to its models: the models
    (dict(processor_fps=50, models_fps=55, io_fps=200, decode_fps=400), "models"),
    # processor far below its models: the work around them (warps, masks, pastes)
    (dict(processor_fps=50, models_fps=300, io_fps=200, decode_fps=400), "CPU-side per-face work"),
    # models not measured: the processor path is the models'
    (dict(processor_fps=50, models_fps=None, io_fps=200, decode_fps=400), "models"),
    # decode+encode slower, far below decode alone: the encoder (an H200 without NVENC, libx264 on the CPU)
    (dict(processor_fps=300, models_fps=400, io_fps=90, decode_fps=500), "encoder"),
    # decode+encode about as fast as decode alone: the decoder
    (dict(processor_fps=300, models_fps=400, io_fps=90, decode_fps=100), "decoder"),
])
def test_the_slower_path_names_the_bound(limits, bound):
    found = name_bound(e2e_fps=45, **limits)
    assert found.name == bound
    limit = min(limits["processor_fps"], limits["io_fps"])
    assert found.headroom == pytest.approx(45 / limit)
    assert "end to end 45.0 fps" in found.reason


def test_busy_cores_are_said():
    assert "every core busy (15.5 of 16)" in name_bound(40, 50, None, 200, 400, 15.5, 16).reason
    assert "core busy" not in name_bound(40, 50, None, 200, 400, 4.0, 16).reason


def test_models_rate_from_their_compute():
    assert models_fps(4.0) == 250 and models_fps(None) is None and models_fps(0.0) is None


def test_gpu_sampler_says_why_it_has_no_figures_on_a_machine_without_a_gpu():
    with GpuSampler((0,)) as sampler:
        pass
    figures = sampler.figures()
    assert figures["gpu_busy_percent"] is None and figures["gpu_memory_mb"] is None
    assert figures["gpu_reason"], "a reason, never a silent absence"


def test_hardware_decoding_listing():
    listing = "Hardware acceleration methods:\nvdpau\ncuda\nvaapi\n\n"
    assert hardware_decoding(listing) == ("vdpau", "cuda", "vaapi")
    assert hardware_decoding("Hardware acceleration methods:\n") == ()
