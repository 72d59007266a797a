"""The decoder's own 4:2:0 conversion against ffmpeg's exact one, its fallbacks, and the round trip."""
import io
import subprocess
from fractions import Fraction

import cv2
import numpy as np
import pytest

from conftest import decode_all, make_clip
from facefusion_batch.errors import MediaError
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.decoder import Decoder, Yuv420Converter, read_frames, yuv_to_bgr_matrix
from facefusion_batch.video.ffmpeg import EncodeOptions
from facefusion_batch.video.probe import probe

BT709 = ["-vf", "scale=out_color_matrix=bt709", "-colorspace", "bt709", "-color_primaries", "bt709",
         "-color_trc", "bt709"]


def test_read_frames_reuses_buffers_and_rejects_partial_frames():
    frames = np.arange(5 * 2 * 3 * 3, dtype=np.uint8).reshape(5, 2, 3, 3)
    out = [f.copy() for f in read_frames(io.BytesIO(frames.tobytes()), 3, 2, buffers=2)]
    assert np.array_equal(np.stack(out), frames)
    with pytest.raises(MediaError, match="mid-frame"):
        list(read_frames(io.BytesIO(frames.tobytes()[:-1]), 3, 2, buffers=2))
    rest = [f.copy() for f in read_frames(io.BytesIO(frames.tobytes()), 3, 2, buffers=1, skip=3)]
    assert np.array_equal(np.stack(rest), frames[3:])


def test_read_frames_converts_planes_after_the_skipped_ones():
    rng = np.random.default_rng(0)
    planes = rng.integers(16, 236, (4, 6, 4), dtype=np.uint8)  # four 4x4 frames of I420
    convert = Yuv420Converter(4, 4, None, False)
    out = [f.copy() for f in read_frames(io.BytesIO(planes.tobytes()), 4, 4, buffers=2, skip=1, convert=convert)]
    expected = [cv2.cvtColor(p, cv2.COLOR_YUV2BGR_I420) for p in planes[1:]]
    assert np.array_equal(np.stack(out), np.stack(expected))


@pytest.mark.parametrize("matrix", [None, "bt709", "bt2020nc"])
@pytest.mark.parametrize("full", [False, True])
def test_yuv_matrix_maps_black_white_and_grey(matrix, full):
    m = yuv_to_bgr_matrix(matrix, full)
    black, white = (0, 255) if full else (16, 235)
    for luma, expected in ((black, 0), (white, 255), ((black + white) / 2, 127.5)):
        assert np.allclose(m @ np.array([luma, 128, 128, 1]), expected, atol=1e-3)


def test_yuv_matrix_gives_pure_red_for_bt601_red():
    # BT.601 limited range: R=255, G=B=0 is Y=81.5, Cb=90.3, Cr=240.
    b, g, r = yuv_to_bgr_matrix(None, False) @ np.array([81.535, 90.261, 240.0, 1])
    assert abs(r - 255) < 0.5 and abs(g) < 0.5 and abs(b) < 0.5


def _frames(decoder: Decoder) -> np.ndarray:
    try:
        return np.stack([f.copy() for f in decoder.frames(buffers=2)])
    finally:
        decoder.stop(kill=False)


@pytest.mark.parametrize("extra, raw", [
    ([], "yuv420p"),                                              # untagged: BT.601, OpenCV's own path
    (BT709, "yuv420p"),                                           # HD material: BT.709 by matrix
    (["-pix_fmt", "yuvj420p", "-color_range", "pc"], "yuvj420p"),  # full range (phones, webcams)
])
def test_decoder_converts_like_ffmpeg(tmp_path, extra, raw):
    clip = make_clip(tmp_path / "c.mp4", frames=6, audio=False, extra=extra)
    decoder = Decoder(probe(clip), tmp_path)
    assert decoder.pixel_format == raw
    ours, exact = _frames(decoder).astype(np.int16), decode_all(clip).astype(np.int16)
    assert ours.shape == exact.shape
    diff = ours - exact
    # Chroma is replicated, not interpolated: small differences at colour edges, no bias.
    assert abs(diff.mean()) < 0.1 and np.abs(diff).mean() < 0.6
    assert decoder.returncode == 0


@pytest.mark.parametrize("extra", [["-pix_fmt", "yuv444p"], ["-pix_fmt", "yuv420p10le", "-profile:v", "high10"],
                                   ["-c:v", "mpeg4", "-vf", "scale=319:239"]])  # 4:4:4, 10-bit, odd size
def test_other_sources_are_converted_by_ffmpeg_exactly(tmp_path, extra):
    clip = make_clip(tmp_path / "c.mp4", frames=4, audio=False, extra=extra)
    decoder = Decoder(probe(clip), tmp_path)
    assert decoder.pixel_format == "bgr24"
    assert np.array_equal(_frames(decoder), decode_all(clip))


def test_untouched_pixels_survive_decode_and_lossless_encode(tmp_path):
    """Decode with the fast path, encode as the pipeline does (here losslessly, quality 100 = CRF 0): the
    4:2:0 planes come back as they were, apart from rounding."""
    clip = make_clip(tmp_path / "c.mp4", frames=4, audio=False, extra=BT709)
    info = probe(clip)
    frames = _frames(Decoder(info, tmp_path))
    out = tmp_path / "out.mp4"
    command = ffmpeg.encode_command(out, info.width, info.height, Fraction(25), EncodeOptions("libx264", "veryfast", 100),
                                    info.colour, "yuv420p", "mp4")
    subprocess.run(command, input=frames.tobytes(), check=True)

    def planes(path):
        raw = subprocess.run([ffmpeg.ffmpeg_binary(), "-v", "error", "-i", str(path), "-f", "rawvideo",
                              "-pix_fmt", "yuv420p", "-"], capture_output=True, check=True).stdout
        return np.frombuffer(raw, np.uint8).astype(np.int16)

    diff = planes(out) - planes(clip)
    assert abs(diff.mean()) < 0.05 and np.abs(diff).mean() < 0.1


def test_decoder_reports_a_file_damaged_after_probing(tmp_path):
    clip = make_clip(tmp_path / "c.mp4", frames=3, audio=False)
    info = probe(clip)
    clip.write_bytes(clip.read_bytes()[:2000])
    decoder = Decoder(info, tmp_path)
    assert list(decoder.frames(buffers=1)) == []
    decoder.stop(kill=False)
    decoder.stop(kill=True)  # a second stop is harmless
    assert decoder.returncode != 0 and decoder.messages().strip()
