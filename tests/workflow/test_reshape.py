"""FaceFusion's trim_frame_start / trim_frame_end, output_video_fps and output_video_scale on videos: the output
is only the part kept (its audio cut to match), at the rate asked (duration kept), at the size asked.

Facts from FaceFusion 3.8.1 (vision.restrict_trim_frame, scale_resolution, normalize_fps; ffmpeg.extract_frames,
merge_video, restore_audio): a half-open range [start, end) clamped to the video; sides times the scale rounded to
even pixels; the rate 1..60."""
from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from conftest import FRAME_H, FRAME_W, decode_all, make_clip
from facefusion_batch.errors import SettingsError, TargetError
from facefusion_batch.settings import load_settings
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.probe import probe
from facefusion_batch.video.reshape import Reshape
from facefusion_batch.workflow import video as video_job
from facefusion_batch.workflow.video_plan import JobOptions
from facefusion_batch.workflow.analysis import MotionGate, Reference
from facefusion_batch.workflow.workspace import Workspace
from facefusion_batch.video.ffmpeg import EncodeOptions


class Marker:
    """A frame processor that 'swaps' one face in every frame and changes nothing (the output is muxed)."""

    def new_gate(self) -> MotionGate:
        return MotionGate(False, threshold=4.0, interval=1)

    def analyse(self, frame: np.ndarray, reference: Reference) -> None:
        reference.result.set_result(([], []))

    def __call__(self, frame: np.ndarray, reference: Reference, is_new: bool, index: int
                 ) -> tuple[np.ndarray, int, list]:
        return frame, 1, []

    def finish(self, frame: np.ndarray, faces: int, fills: list) -> tuple[np.ndarray, int]:
        return frame, faces


def strip_levels(path: Path) -> list[int]:
    """The grey level of make_clip's changing strip in each frame: frame i of the clip has (i * 7) % 255."""
    return [int(round(float(np.median(frame[-12:, :, 1])))) for frame in decode_all(path)]


def reshaped(tmp_path: Path, reshape: Reshape, frames: int = 40, audio: bool = True, processor=None) -> Path:
    clip = make_clip(tmp_path / "a.mp4", frames=frames, audio=audio)
    options = JobOptions(temp_root=tmp_path / "tmp", chunk_size=8, frame_format="bmp", threads=2,
                                   in_flight=3, encode=EncodeOptions("libx264", "ultrafast", 90), reshape=reshape)
    out = tmp_path / "out.mp4"
    encoded = video_job.encode_video(clip, out, processor or Marker(), {}, options, lambda n: None, lambda n: None)
    encoded.finish()
    return out


def test_the_output_is_the_trimmed_part_with_its_audio(tmp_path):
    out = reshaped(tmp_path, Reshape(trim_start=10, trim_end=30))
    info = probe(out)
    assert info.frame_count == 20 and info.fps == 25
    levels = strip_levels(out)
    expected = [(i * 7) % 255 for i in range(10, 30)]
    assert max(abs(a - b) for a, b in zip(levels, expected)) <= 3, (levels, expected)
    assert info.audio_codec == "aac"
    audio = float(json.loads(_ffprobe_audio(out))["duration"])
    assert abs(audio - 0.8) < 0.1, "the audio is cut to the part kept"


def _ffprobe_audio(path: Path) -> str:
    """The audio stream's duration, measured by decoding it (ffmpeg -f null)."""
    import re
    import subprocess

    result = subprocess.run([ffmpeg.ffmpeg_binary(), "-nostdin", "-i", str(path), "-map", "0:a:0", "-f", "null", "-"],
                            capture_output=True, text=True)
    times = re.findall(r"time=(\d+):(\d+):(\d+\.\d+)", result.stderr)
    h, m, s = times[-1]
    return json.dumps({"duration": int(h) * 3600 + int(m) * 60 + float(s)})


def test_an_open_ended_trim_keeps_to_the_end(tmp_path):
    out = reshaped(tmp_path, Reshape(trim_start=33), audio=False)
    assert probe(out).frame_count == 7
    assert strip_levels(out)[0] in range((33 * 7) % 255 - 3, (33 * 7) % 255 + 4)


def test_the_frame_rate_is_changed_and_the_duration_kept(tmp_path):
    out = reshaped(tmp_path, Reshape(fps=10.0), audio=False)
    info = probe(out)
    assert info.fps == 10 and info.frame_count == 16  # 40 frames at 25 fps: 1.6 s
    (tmp_path / "up").mkdir()
    raised = probe(reshaped(tmp_path / "up", Reshape(fps=50.0), audio=False))
    assert raised.frame_count == 80 and raised.fps == 50, "frames repeated to raise the rate"


def test_trim_and_rate_together(tmp_path):
    out = reshaped(tmp_path, Reshape(trim_start=5, trim_end=30, fps=10.0), audio=False)
    assert probe(out).frame_count == 10 and probe(out).fps == 10


@pytest.mark.parametrize("scale, size", [(0.5, (FRAME_W // 2, FRAME_H // 2)),
                                         (1.5, (FRAME_W * 3 // 2, FRAME_H * 3 // 2))])
def test_the_output_is_scaled(tmp_path, scale, size):
    out = reshaped(tmp_path, Reshape(scale=scale), frames=12, audio=False)
    info = probe(out)
    assert (info.width, info.height) == size and info.frame_count == 12


def test_a_video_without_faces_is_still_trimmed(tmp_path):
    """Nothing swapped: the original is not copied through when a part of it was asked for."""
    class Nothing(Marker):
        def __call__(self, frame, reference, is_new, index):
            return frame, 0, []

    out = reshaped(tmp_path, Reshape(trim_start=0, trim_end=12), audio=False, processor=Nothing())
    assert probe(out).frame_count == 12


def test_a_trim_past_the_end_fails_that_target(tmp_path):
    with pytest.raises(TargetError, match="keeps no frame of its 40"):
        reshaped(tmp_path, Reshape(trim_start=50), audio=False)


def test_reshape_facts():
    shape = Reshape(trim_start=-5, trim_end=500)
    assert shape.window(100) == (0, 100)
    assert Reshape(trim_end=20).window(100) == (0, 20) and Reshape().window(100) == (0, 100)
    assert Reshape(scale=0.25).identity is False and Reshape(trim_start=0).identity is True


def test_commands_carry_the_selection_and_the_audio_window(tmp_path):
    decode = ffmpeg.decode_command(tmp_path / "a.mp4", "bgr24", select="trim=start_frame=3:end_frame=9,fps=10/1")
    assert decode[decode.index("-vf") + 1] == "trim=start_frame=3:end_frame=9,fps=10/1"
    mux = ffmpeg.mux_command(tmp_path / "l.txt", tmp_path / "a.mp4", tmp_path / "o.mp4", "mp4", "aac", {},
                             video_start=0.5, window=(1.25, 2.0))
    original = mux.index(ffmpeg.local(tmp_path / "a.mp4"))
    assert mux[original - 5:original - 1] == ["-ss", "1.250000", "-t", "2.000000"]
    assert "-itsoffset" not in mux, "a trimmed video starts at 0, with its audio"
    encode = ffmpeg.encode_command(tmp_path / "c.mp4", 64, 48, Fraction(25), EncodeOptions("libx264", "fast", 80),
                                   ffmpeg.Colour(), "yuv420p", "mp4", size=(32, 24))
    assert encode[encode.index("-vf") + 1].startswith("scale=32:24")


@pytest.mark.parametrize("flags, text", [
    ({"trim_frame_start": "30", "trim_frame_end": "30"}, "trim_frame_start 30 is not below trim_frame_end 30"),
    ({"output_video_fps": "0.5"}, "out of range 1.0..60.0"),
    ({"output_video_scale": "9"}, "out of range 0.25..8.0"),
])
def test_contradictions_are_refused_at_start(flags, text):
    with pytest.raises(SettingsError, match=text):
        load_settings(environ={}, flags=flags)
