"""A video's frames as BGR arrays, read from an ffmpeg pipe.

8-bit 4:2:0 sources come through the pipe as they are decoded (half the bytes of BGR) and are converted
here with OpenCV; ffmpeg's own exact conversion (accurate_rnd + full_chroma_int) costs about twice the
decoding itself. The conversion is unbiased (mean shift < 0.1 grey level) and, because chroma is
replicated rather than interpolated, an encoder's 2x2 chroma averaging gives the source's chroma back:
untouched pixels survive decode + encode as well as with ffmpeg's conversion. Other sources (10-bit, 4:4:4,
odd sizes, unusual matrices) are converted by ffmpeg. HDR kept as HDR comes as 16-bit BGR, rounded to
8 bits here: the frames are processed at 8 bits, and `deepen` applies what processing changed to the
16-bit pixels, which a second decoder reads again for the encoder.
"""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import IO, Iterator

import cv2
import numpy as np

from facefusion_batch.errors import MediaError
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.probe import VideoInfo

# Luma weights (Kr, Kb) of the YCbCr matrices; an untagged stream is BT.601, as ffmpeg assumes.
_WEIGHTS = {None: (0.299, 0.114), "bt470bg": (0.299, 0.114), "smpte170m": (0.299, 0.114),
            "bt709": (0.2126, 0.0722), "fcc": (0.30, 0.11), "smpte240m": (0.212, 0.087),
            "bt2020nc": (0.2627, 0.0593)}
_PLANAR_420 = {"yuv420p": None, "yuvj420p": "pc"}  # pixel format -> range it implies


def raw_format(info: VideoInfo, tone_map: bool = False) -> str:
    """The pixel format the decoder pipes: 16-bit BGR for HDR that stays HDR; the source's own 4:2:0
    planes when this module can convert them; else bgr24 converted by ffmpeg (always when it tone-maps)."""
    if info.colour.hdr and not tone_map:
        return DEEP
    even = info.width % 2 == 0 and info.height % 2 == 0
    if not tone_map and info.pixel_format in _PLANAR_420 and info.colour.matrix in _WEIGHTS and even:
        return info.pixel_format
    return "bgr24"


def full_range(info: VideoInfo) -> bool:
    return (_PLANAR_420.get(info.pixel_format) or info.colour.range) == "pc"


def yuv_to_bgr_matrix(matrix: str | None, full: bool) -> np.ndarray:
    """The 3x4 affine map from (Y, Cb, Cr) to (B, G, R) for cv2.transform."""
    kr, kb = _WEIGHTS[matrix]
    kg = 1 - kr - kb
    luma, chroma = (1.0, 1.0) if full else (255 / 219, 255 / 224)
    cr_r, cb_b = 2 * (1 - kr) * chroma, 2 * (1 - kb) * chroma
    linear = np.array([[luma, cb_b, 0.0],
                       [luma, -cb_b * kb / kg, -cr_r * kr / kg],
                       [luma, 0.0, cr_r]])
    offset = -linear @ np.array([0.0 if full else 16.0, 128.0, 128.0])
    return np.hstack([linear, offset[:, None]]).astype(np.float32)


def read_exact(stream: IO[bytes], view: memoryview) -> int:
    """Fill `view` from `stream`; returns the bytes read (fewer only at the end of the stream)."""
    filled = 0
    while filled < len(view):
        got = stream.readinto(view[filled:])  # type: ignore[attr-defined]
        if not got:
            break
        filled += got
    return filled


def read_frames(stream: IO[bytes], width: int, height: int, buffers: int, skip: int = 0,
                convert: Yuv420Converter | Bgr48Converter | None = None, dtype: type = np.uint8
                ) -> Iterator[np.ndarray]:
    """Yield BGR frames (`dtype`) from a raw pipe of BGR frames, or of what `convert` turns into 8-bit BGR
    (I420 planes, 16-bit BGR), into a ring of `buffers` reused arrays; the first `skip` frames are read
    past without being converted.

    A yielded array is overwritten `buffers` frames later, so callers keep fewer than that alive.
    """
    raw = np.empty(*convert.raw) if convert else np.empty((height, width, 3), dtype)
    scratch = memoryview(raw).cast("B")
    ring = [np.empty((height, width, 3), dtype=np.uint8 if convert else dtype) for _ in range(buffers)]
    for index in range(1 << 62):
        frame = ring[index % buffers]
        into = scratch if convert or index < skip else memoryview(frame).cast("B")
        filled = read_exact(stream, into)
        if filled == 0:
            return
        if filled < len(into):
            raise MediaError(f"decoder stopped mid-frame ({filled} of {len(into)} bytes)")
        if index >= skip:
            yield convert(raw, frame) if convert else frame


DEEP = "bgr48le"  # 16 bits per channel: HDR's 10 bits kept


def to_8bit(deep: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """16-bit BGR rounded to 8 bits (v / 257, the inverse of v * 257)."""
    return cv2.convertScaleAbs(deep, out, alpha=1 / 257)


def deepen(deep: np.ndarray, processed: np.ndarray) -> np.ndarray:
    """The 16-bit frame to encode: what processing changed at 8 bits, applied to the decoded 16-bit
    pixels (`deep`) as a change: deep + (processed - to_8bit(deep)) * 257, saturating. A pixel processing
    left alone keeps its 16 bits exactly; a faint full-frame change (the invisible watermark, +/- a few
    levels) is added without losing them; a swapped face takes the processed value (plus the source's
    sub-8-bit remainder, under half a level)."""
    low = cv2.multiply(to_8bit(deep), 257, dtype=cv2.CV_16U)
    above, below = cv2.subtract(deep, low), cv2.subtract(low, deep)  # the remainder's two signs
    out = cv2.multiply(processed, 257, dtype=cv2.CV_16U)
    cv2.add(out, above, dst=out)
    return cv2.subtract(out, below, dst=out)


class Bgr48Converter:
    """16-bit BGR from the pipe -> 8-bit BGR into a caller's array."""

    def __init__(self, width: int, height: int) -> None:
        self.raw = ((height, width, 3), np.uint16)

    def __call__(self, deep: np.ndarray, out: np.ndarray) -> np.ndarray:
        return to_8bit(deep, out)


class Yuv420Converter:
    """I420 planes -> BGR into a caller's array, with scratch buffers reused between frames."""

    def __init__(self, width: int, height: int, matrix: str | None, full: bool) -> None:
        self.width, self.height = width, height
        self.raw = ((height * 3 // 2, width), np.uint8)
        # OpenCV's own I420 conversion is BT.601 limited range (and fastest); other cases take the matrix.
        self._direct = _WEIGHTS[matrix] == _WEIGHTS[None] and not full
        self._matrix = yuv_to_bgr_matrix(matrix, full)
        self._chroma = np.empty((height // 2, width // 2, 2), np.uint8)
        self._chroma_full = np.empty((height, width, 2), np.uint8)
        self._ycc = np.empty((height, width, 3), np.uint8)

    def __call__(self, planes: np.ndarray, out: np.ndarray) -> np.ndarray:
        if self._direct:
            return cv2.cvtColor(planes, cv2.COLOR_YUV2BGR_I420, dst=out)
        w, h = self.width, self.height
        quarter = (h // 2) * (w // 2)
        flat = planes.reshape(-1)
        cb = flat[w * h:w * h + quarter].reshape(h // 2, w // 2)
        cr = flat[w * h + quarter:].reshape(h // 2, w // 2)
        cv2.merge([cb, cr], dst=self._chroma)
        cv2.resize(self._chroma, (w, h), dst=self._chroma_full, interpolation=cv2.INTER_NEAREST)
        cv2.merge([flat[:w * h].reshape(h, w), self._chroma_full], dst=self._ycc)
        return cv2.transform(self._ycc, self._matrix, dst=out)


class Decoder:
    """One ffmpeg process decoding the first video stream of `info.path` (rotation applied, one frame per
    source frame or those the `select` filter keeps, HDR tone-mapped to SDR when `tone_map`); its messages
    go to an unnamed file in `log_dir`, read by `messages()`."""

    def __init__(self, info: VideoInfo, log_dir: Path, tone_map: bool = False, select: str | None = None) -> None:
        self.info, self.tone_map, self.select = info, tone_map, select
        self.pixel_format = raw_format(info, tone_map)
        self._log = tempfile.TemporaryFile(dir=log_dir, prefix=".ffb-decode-")
        self._process = subprocess.Popen(ffmpeg.decode_command(info.path, self.pixel_format, tone_map, select),
                                         stdout=subprocess.PIPE, stderr=self._log)
        self._messages: bytes | None = None

    def frames(self, buffers: int, skip: int = 0, deep: bool = False) -> Iterator[np.ndarray]:
        """BGR frames in a ring of `buffers` reused arrays, after the first `skip` (see read_frames): 8-bit,
        or with `deep` the 16-bit frames as piped (a decoder started for HDR kept as HDR)."""
        info, stream = self.info, self._process.stdout
        assert stream is not None
        if deep:
            assert self.pixel_format == DEEP
            return read_frames(stream, info.width, info.height, buffers, skip, dtype=np.uint16)
        convert: Yuv420Converter | Bgr48Converter | None = None
        if self.pixel_format == DEEP:
            convert = Bgr48Converter(info.width, info.height)
        elif self.pixel_format != "bgr24":
            convert = Yuv420Converter(info.width, info.height, info.colour.matrix, full_range(info))
        return read_frames(stream, info.width, info.height, buffers, skip, convert)

    @property
    def finished(self) -> bool:
        return self._process.poll() is not None

    @property
    def returncode(self) -> int | None:
        return self._process.poll()

    def stop(self, kill: bool) -> None:
        """End the process (killed when `kill`, else waited for) and keep its messages. Safe to repeat."""
        process = self._process
        if process.poll() is None:
            if kill:
                process.kill()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout:
            process.stdout.close()
        if self._messages is None:
            self._log.seek(0)
            self._messages = self._log.read()
            self._log.close()

    def messages(self) -> bytes:
        """What ffmpeg wrote to stderr (complete once stopped)."""
        if self._messages is not None:
            return self._messages
        self._log.seek(0)
        return self._log.read()


def frame_at(info: VideoInfo, index: int, log_dir: Path) -> np.ndarray:
    """Frame `index` (from 0, as decoded: rotation applied) of the video, as a BGR array; MediaError when the
    video has no such frame."""
    if not 0 <= index < info.frame_count:
        raise MediaError(f"{info.path}: has no frame {index} (its frames are 0..{info.frame_count - 1})")
    log_dir.mkdir(parents=True, exist_ok=True)
    select = f"trim=start_frame={index}:end_frame={index + 1}"
    decoder = Decoder(info, log_dir, tone_map=info.colour.hdr, select=select)
    try:
        frame = next(iter(decoder.frames(1)), None)
        frame = None if frame is None else frame.copy()
    finally:
        decoder.stop(kill=True)
    if frame is None:
        raise MediaError(f"{info.path}: frame {index} could not be decoded "
                         f"({ffmpeg.error_line(decoder.messages())})")
    return frame


def sampled_frames(path: Path, step: int, width: int, height: int) -> Iterator[np.ndarray]:
    """Every `step`-th frame of the video's first stream (from frame 0), as BGR at width x height; a
    decoding failure raises MediaError once the frames that could be read are read."""
    frame_bytes = width * height * 3
    process = subprocess.Popen(ffmpeg.sample_command(path, step, width, height), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    ended = False
    try:
        while True:
            data = process.stdout.read(frame_bytes)
            if len(data) < frame_bytes:
                ended = True
                break
            yield np.frombuffer(data, np.uint8).reshape(height, width, 3)
    finally:
        process.stdout.close()
        if not ended:
            process.kill()
        stderr = process.stderr.read()
        process.stderr.close()
        code = process.wait()
    if code != 0:
        raise MediaError(f"{path}: decoding failed ({ffmpeg.error_line(stderr)})")

