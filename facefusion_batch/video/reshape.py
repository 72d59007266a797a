"""What a video output keeps of its target: a frame range, a frame rate and a size (FaceFusion's
trim_frame_start / trim_frame_end, output_video_fps and output_video_scale), as pure functions.

As in FaceFusion 3.8.1: the trim is a half-open frame range [start, end) clamped to the video, and the
output is that part only, its audio cut to match; the frame rate is applied when the frames are decoded
(frames dropped, or repeated to raise it), so the duration stays; the scale multiplies both sides,
rounded to even pixels, and is applied by the encoder (frames are processed at the target's size).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

from facefusion_batch.video.probe import VideoInfo


@dataclass(frozen=True)
class Reshape:
    trim_start: int | None = None
    trim_end: int | None = None  # exclusive
    fps: float | None = None  # None: the target's
    scale: float = 1.0

    @property
    def trims(self) -> bool:
        return bool(self.trim_start) or self.trim_end is not None

    @property
    def identity(self) -> bool:
        """Nothing to change: the output has the target's frames, rate and size."""
        return not self.trims and self.fps is None and self.scale == 1.0

    def window(self, frame_count: int) -> tuple[int, int]:
        """The frame range [start, end) kept, clamped to the video's frames as FaceFusion clamps it."""
        start = max(0, min(self.trim_start or 0, frame_count))
        end = frame_count if self.trim_end is None else max(0, min(self.trim_end, frame_count))
        return start, end

    def rate(self, info: VideoInfo) -> Fraction:
        return info.fps if self.fps is None else Fraction(self.fps).limit_denominator(1001)

    def frame_filter(self, info: VideoInfo) -> str | None:
        """The decoder's filter selecting the kept frames at the output rate (None: every frame as it is)."""
        filters = []
        if self.trims:
            start, end = self.window(info.frame_count)
            filters.append(f"trim=start_frame={start}:end_frame={end}")
        if self.fps is not None:
            rate = self.rate(info)
            filters.append(f"fps={rate.numerator}/{rate.denominator}")
        return ",".join(filters) or None

    def size(self, info: VideoInfo) -> tuple[int, int] | None:
        """The output's size when scaled: each side times the scale, rounded to even pixels (FaceFusion's
        normalize_resolution); None when not scaled."""
        if self.scale == 1.0:
            return None
        width, height = int(info.width * self.scale), int(info.height * self.scale)
        return max(2, round(width / 2) * 2), max(2, round(height / 2) * 2)

    def applied(self, info: VideoInfo) -> VideoInfo:
        """The video as its frames reach processing: the kept frames, at the output rate (the size is the
        target's; the encoder scales). The frame count after a rate change is ffmpeg's fps filter's."""
        if not self.trims and self.fps is None:
            return info
        start, end = self.window(info.frame_count)
        kept = end - start
        rate = self.rate(info)
        count = kept if self.fps is None else math.floor(kept * rate / info.fps + Fraction(1, 2))
        return dataclasses.replace(info, frame_count=count, fps=rate, duration=float(kept / info.fps),
                                   variable_frame_rate=info.variable_frame_rate and self.fps is None,
                                   start_time=0.0 if self.trims else info.start_time,
                                   timecode=None if self.trims else info.timecode)

    def audio_window(self, info: VideoInfo) -> tuple[float, float] | None:
        """(seconds into the target, seconds long) of the audio kept with a trimmed video; None untrimmed."""
        if not self.trims:
            return None
        start, end = self.window(info.frame_count)
        return info.start_time + float(start / info.fps), float((end - start) / info.fps)
