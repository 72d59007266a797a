"""Colour kept (issue 26, class 3): primaries, transfer, matrix and range on every output, HDR10 kept
10-bit with its static metadata where libx265 writes it, and a real tone-map to SDR where it can't."""
from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_batch.cli import main
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.decoder import Decoder
from facefusion_batch.video.ffmpeg import SDR_BT709, Colour, EncodeOptions
from facefusion_batch.video.probe import probe

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hostile_media import MASTER_DISPLAY, MAX_CLL, _hdr10, _tagged, _tags  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HDR10 = Colour("bt2020nc", "bt2020", "smpte2084", "tv", MASTER_DISPLAY, MAX_CLL)


def _encode_args(colour: Colour, encoder: str = "libx264", pixel_format: str = "yuv420p") -> list[str]:
    return ffmpeg.encode_command(Path("c.mp4"), 64, 64, Fraction(25), EncodeOptions(encoder, "fast", 80), colour,
                                 pixel_format, "mp4")


@pytest.mark.parametrize("colour, tags", [
    (Colour("bt709", "bt709", "bt709", "tv"), "color_primaries=bt709:color_trc=bt709:colorspace=bt709:range=tv"),
    (Colour("smpte170m", "smpte170m", "smpte170m", "tv"),
     "color_primaries=smpte170m:color_trc=smpte170m:colorspace=smpte170m:range=tv"),
    (Colour("bt709", "bt709", "iec61966-2-1", "pc"), "color_primaries=bt709:color_trc=iec61966-2-1:colorspace=bt709:range=pc"),
    (Colour("bt709", None, None, "tv"), "colorspace=bt709:range=tv"),  # what is unknown stays unset
    (Colour("bt709", "weird", "reserved", None), "colorspace=bt709"),  # a name setparams does not take is left out
    # An RGB source (PNG in MP4): its identity matrix would mislabel the YUV output
    (Colour("gbr", "bt709", "iec61966-2-1", "pc"), "color_primaries=bt709:color_trc=iec61966-2-1:range=pc"),
])
def test_every_colour_property_is_set_on_the_frames_the_encoder_gets(colour, tags):
    chain = _encode_args(colour)[_encode_args(colour).index("-vf") + 1].split(",")
    assert f"setparams={tags}" in chain
    assert chain[-1] == f"setparams={tags}"  # after the conversion to YUV, which would reset them


def test_hevc_is_tagged_hvc1_in_mp4_and_mov_only():
    assert ffmpeg.codec_tag_args("libx265", "mp4") == ffmpeg.codec_tag_args("libx265", "mov") == ["-tag:v", "hvc1"]
    assert ffmpeg.codec_tag_args("libx265", "mkv") == [] and ffmpeg.codec_tag_args("libx264", "mp4") == []


def test_untagged_source_gets_no_setparams():
    assert ffmpeg.setparams_filter(Colour()) is None and "-vf" not in _encode_args(Colour())


def test_hdr10_metadata_goes_to_x265_and_the_output_stays_10_bit():
    args = _encode_args(HDR10, "libx265", ffmpeg.output_pixel_format(64, 64, "yuv420p10le", ten_bit=True))
    params = args[args.index("-x265-params") + 1].split(":")
    assert f"master-display={MASTER_DISPLAY}" in params and f"max-cll={MAX_CLL}" in params and "hdr10=1" in params
    assert args[args.index("-pix_fmt", args.index("pipe:0")) + 1] == "yuv420p10le"
    assert "color_trc=smpte2084" in args[args.index("-vf") + 1]
    hlg = Colour("bt2020nc", "bt2020", "arib-std-b67", "tv")
    assert ffmpeg.hdr_args("libx265", hlg) == ["-x265-params", "log-level=error"]  # HLG carries no static metadata
    assert ffmpeg.hdr_args("libx264", HDR10) == []
    assert ffmpeg.output_pixel_format(63, 64, "yuv420p10le", ten_bit=True) == "yuv444p10le"


@pytest.mark.parametrize("encoder, container, resolved, kept", [
    ("auto", "mp4", "libx265", True), ("auto", "mkv", "libx265", True), ("auto", "mov", "libx265", True),
    ("auto", "webm", "libvpx-vp9", False), ("auto", "avi", "libx264", False), ("libx264", "mp4", "libx264", False),
    ("h264_nvenc", "mp4", "h264_nvenc", False), ("libx265", "mkv", "libx265", True),
])
def test_hdr_is_kept_by_libx265_and_tone_mapped_by_every_other_encoder(encoder, container, resolved, kept):
    assert ffmpeg.resolve_encoder(encoder, container, HDR10) == resolved
    assert ffmpeg.output_colour(HDR10, resolved) == (HDR10 if kept else SDR_BT709)
    assert ffmpeg.resolve_encoder("auto", container, SDR_BT709) in ("libx264", "libvpx-vp9")  # SDR: as before


def test_tone_map_is_in_the_decoder_only_when_asked():
    assert "-vf" not in ffmpeg.decode_command(Path("in.mp4"))
    args = ffmpeg.decode_command(Path("in.mp4"), tone_map=True)
    chain = args[args.index("-vf") + 1]
    assert "zscale=t=linear" in chain and "tonemap=tonemap=hable" in chain and "zscale=t=bt709" in chain


@pytest.mark.parametrize("text", [
    # ffmpeg 9's showinfo, and ffmpeg 6's wording of the same side data
    "[Parsed_showinfo_0 @ 0x1]   side data - Mastering display metadata: has_primaries:1 has_luminance:1 "
    "r(0.6800,0.3200) g(0.2650,0.6900) b(0.1500 0.0600) wp(0.3127, 0.3290) min_luminance=0.000100, "
    "max_luminance=1000.000000\n[Parsed_showinfo_0 @ 0x1]   side data - Content light level metadata: "
    "MaxCLL=1000, MaxFALL=400\n",
    "  side data - mastering display: has_primaries:1 has_luminance:1 r(0.6800,0.3200) g(0.2650,0.6900) "
    "b(0.1500 0.0600) wp(0.3127, 0.3290) min_luminance=0.000100, max_luminance=1000.000000\n"
    "  side data - content light level metadata: MaxCLL=1000, MaxFALL=400\n",
])
def test_hdr10_metadata_is_read_from_ffmpegs_description(text):
    assert ffmpeg.parse_hdr_metadata(text) == (MASTER_DISPLAY, MAX_CLL)
    assert ffmpeg.parse_hdr_metadata("Content light level metadata: MaxCLL=0, MaxFALL=0") == (None, "0,0")
    assert ffmpeg.parse_hdr_metadata("nothing here") == (None, None)


def _pq(nits: np.ndarray) -> np.ndarray:
    """SMPTE ST 2084 inverse EOTF: cd/m² -> signal 0..1."""
    m1, m2, c1, c2, c3 = 0.1593017578125, 78.84375, 0.8359375, 18.8515625, 18.6875
    y = (nits / 10000) ** m1
    return ((c1 + c2 * y) / (1 + c3 * y)) ** m2


def _pq_eotf(signal: np.ndarray) -> np.ndarray:
    m1, m2, c1, c2, c3 = 0.1593017578125, 78.84375, 0.8359375, 18.8515625, 18.6875
    p = signal ** (1 / m2)
    return 10000 * (np.maximum(p - c1, 0) / (c2 - c3 * p)) ** (1 / m1)


def _hable(x: np.ndarray) -> np.ndarray:
    a, b, c, d, e, f = 0.15, 0.50, 0.10, 0.20, 0.02, 0.30
    return (x * (a * x + c * b) + d * e) / (x * (a * x + b) + d * f) - e / f


def test_tone_map_is_a_real_hdr_to_sdr_curve(tmp_path):
    """Grey patches at 1, 10, 100, 400 and 1000 cd/m² in PQ come out as the Hable curve (peak 1000 cd/m²,
    from MaxCLL; reference white 100) under BT.709's display transfer (BT.1886, gamma 2.4), not as PQ code
    values read as if they were SDR."""
    nits = np.array([1.0, 10.0, 100.0, 400.0, 1000.0])
    codes = np.round(_pq(nits) * 255).astype(np.uint8)
    frame = np.repeat(np.repeat(codes, 64)[None, :], 64, axis=0)
    frame = np.ascontiguousarray(np.dstack([frame] * 3))
    clip = tmp_path / "pq.mp4"
    subprocess.run([ffmpeg.ffmpeg_binary(), "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "bgr24", "-s", "320x64",
                    "-r", "25", "-i", "-", "-c:v", "libx265", "-preset", "ultrafast", "-x265-params",
                    f"log-level=error:lossless=1:hdr10=1:max-cll={MAX_CLL}", "-pix_fmt", "yuv444p10le",
                    *_tags("bt2020", "smpte2084", "bt2020nc", "pc"), str(clip)],
                   input=frame.tobytes() * 2, check=True)
    info = probe(clip)
    assert info.colour.hdr and info.colour.max_cll == MAX_CLL
    decoder = Decoder(info, tmp_path, tone_map=True)
    try:
        first = next(iter(decoder.frames(2)))[32, 32::64, 1].astype(float)
    finally:
        decoder.stop(kill=True)
    linear = _hable(_pq_eotf(codes / 255) / 100) / _hable(np.array(10.0))
    expected = np.clip(linear, 0, 1) ** (1 / 2.4) * 255  # zimg's display-referred BT.709: BT.1886's inverse
    assert np.abs(first - expected).max() < 6, (first, expected)
    assert np.abs(first - codes).max() > 30  # far from the PQ codes shown as they are


def _run(tmp_path: Path, clip: Path, *flags: str) -> dict:
    out = tmp_path / "out"
    code = main(["run", "--engine", "offline", "--json", "-q", "-s", str(ROOT / "examples" / "source.jpg"),
                 "-t", str(clip), "-o", str(out), "--temp-path", str(tmp_path / "temp"), *flags])
    assert code == 0
    return out / clip.name


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    monkeypatch.setenv("FFB_MODELS_PATH", str(tmp_path / "no-models"))
    return tmp_path


@pytest.mark.parametrize("name, tags", [
    ("bt709.mp4", ("bt709", "bt709", "bt709")),
    ("bt601.mkv", ("smpte170m", "smpte170m", "smpte170m")),
    ("pal.mov", ("bt470bg", "bt709", "bt470bg")),  # primaries, transfer and matrix all differ from the default
])
def test_sdr_outputs_keep_every_colour_tag(isolated, capsys, name, tags):
    clip = isolated / name
    _tagged(*tags)(clip)
    before = probe(clip).colour
    assert (before.primaries, before.transfer, before.matrix, before.range) == (*tags, "tv")
    output = _run(isolated, clip)
    assert probe(output).colour == before


def test_hdr10_output_is_10_bit_hevc_with_its_metadata(isolated, capsys):
    clip = isolated / "hdr10.mp4"
    _hdr10(clip)
    output = _run(isolated, clip)
    after = probe(output)
    assert after.colour == probe(clip).colour == HDR10
    assert after.codec == "hevc" and after.pixel_format == "yuv420p10le"
    described = subprocess.run([ffmpeg.ffmpeg_binary(), "-hide_banner", "-i", str(output)], capture_output=True,
                               text=True).stderr
    assert "(hvc1 / " in described  # Apple's players need hvc1, not ffmpeg's default hev1
    assert json.loads(capsys.readouterr().out)["outcomes"][0]["status"] == "done"


def test_hdr_through_libx264_is_tone_mapped_and_the_note_says_so(isolated, capsys):
    clip = isolated / "hdr10.mp4"
    _hdr10(clip)
    output = _run(isolated, clip, "--output-video-encoder", "libx264")
    after = probe(output)
    assert after.colour == SDR_BT709 and after.pixel_format == "yuv420p"
    outcome = json.loads(capsys.readouterr().out)["outcomes"][0]
    assert outcome["status"] == "done" and "tone-mapped to SDR BT.709" in outcome["reason"]


def test_deepen_applies_8_bit_changes_to_the_16_bit_pixels():
    from facefusion_batch.video.decoder import deepen, to_8bit

    deep = np.random.default_rng(3).integers(0, 65536, (36, 64, 3), dtype=np.uint16)
    processed = to_8bit(deep)
    assert np.array_equal(deepen(deep, processed), deep)  # nothing changed: every 16-bit pixel stays
    # a faint full-frame change (the invisible watermark) is added at 16 bits, keeping the low bits
    faint = cv2.add(processed, np.full_like(processed, 2))
    expected = np.clip(deep.astype(np.int64) + (faint.astype(np.int64) - processed) * 257, 0, 65535)
    assert np.array_equal(deepen(deep, faint), expected)
    # a swapped face takes the processed value, within half an 8-bit level
    swapped = processed.copy()
    swapped[10:20, 30:40] = 200
    out = deepen(deep, swapped)
    assert np.abs(out[10:20, 30:40].astype(int) - 200 * 257).max() <= 128
    assert np.array_equal(out[:10], deep[:10])


def _luma10(path: Path) -> np.ndarray:
    """The 10-bit luma planes of a clip's frames (frames, height, width)."""
    info = probe(path)
    raw = subprocess.run([ffmpeg.ffmpeg_binary(), "-v", "error", "-i", str(path), "-map", "0:V:0", "-f", "rawvideo",
                          "-pix_fmt", "gray10le", "-"], capture_output=True, check=True).stdout
    return np.frombuffer(raw, np.uint16).reshape(-1, info.height, info.width)


def test_hdr_pixels_away_from_faces_keep_their_10_bits(isolated, capsys):
    """A 10-bit grey ramp (about 480 distinct levels) around the face: frames are processed at 8 bits, but
    the output takes the 16-bit decoded pixels wherever processing left one as it was, so the ramp keeps
    its levels rather than the 256 an 8-bit path leaves."""
    from conftest import FACE_BOX, face_frame

    ramp = np.linspace(0, 65535, 480).astype(np.uint16)
    deep = np.repeat(np.repeat(ramp[None, :, None], 272, axis=0), 3, axis=2)
    x1, y1, x2, y2 = FACE_BOX.astype(int)
    deep[y1:y2, x1:x2] = face_frame()[y1:y2, x1:x2].astype(np.uint16) * 257
    clip = isolated / "ramp.mkv"
    subprocess.run([ffmpeg.ffmpeg_binary(), "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "bgr48le", "-s", "480x272",
                    "-r", "25", "-i", "-", "-c:v", "libx265", "-preset", "ultrafast", "-x265-params",
                    f"log-level=error:lossless=1:hdr10=1:master-display={MASTER_DISPLAY}:max-cll={MAX_CLL}",
                    "-pix_fmt", "yuv420p10le", *_tags("bt2020", "smpte2084", "bt2020nc", "tv"), str(clip)],
                   input=deep.tobytes() * 3, check=True)
    # the invisible watermark changes every pixel by a few levels on purpose: off, to compare the ramp
    output = _run(isolated, clip, "--output-video-quality", "100", "--no-watermark")
    assert json.loads(capsys.readouterr().out)["outcomes"][0]["status"] == "done"
    before, after = _luma10(clip)[:, :40], _luma10(output)[:, :40]  # rows above the face
    assert len(np.unique(before)) > 400
    assert len(np.unique(after)) > 400, "the output's ramp has only the levels of 8 bits"
    assert np.abs(after.astype(int) - before).mean() < 1.5
