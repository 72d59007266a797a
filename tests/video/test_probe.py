from fractions import Fraction

import pytest

from conftest import make_clip
from facefusion_batch.errors import MediaError
from facefusion_batch.video.ffmpeg import ffmpeg_binary
from facefusion_batch.video.probe import frame_timing, parse_colour, probe

FRAMECRC = """#software: Lavf
#tb 0: 1/30000
#media_type 0: video
0,      -2002,          0,     1001,     5031, 0x690d4cdf
0,      -1001,       3003,     1001,      100, 0x0
0,          0,       1001,     1001,      100, 0x0
0,       1001,       2002,     1001,      100, 0x0
"""


def test_frame_timing_is_exact_for_ntsc_rates():
    count, fps, variable, shift = frame_timing(FRAMECRC)[:4]
    assert (count, fps, variable, shift) == (4, Fraction(30000, 1001), False, 0.0)


def test_frame_timing_flags_variable_rate():
    lines = ["#tb 0: 1/1000"] + [f"0, {t}, {t}, 1, 1, 0x0" for t in (0, 40, 80, 200, 240, 400)]
    count, fps, variable, shift = frame_timing("\n".join(lines))[:4]
    assert count == 6 and variable and fps == 12.5
    assert abs(shift - 0.08) < 1e-9  # the frame at 200 ms belongs at 120 ms at a constant 12.5 fps


@pytest.mark.parametrize("text, matrix, primaries, rng", [
    ("tv, bt709, progressive", "bt709", "bt709", "tv"),
    ("tv, bt709/unknown/unknown, progressive", "bt709", None, "tv"),
    ("pc, bt470bg/bt470bg/smpte170m", "bt470bg", "bt470bg", "pc"),
    ("progressive", None, None, None),
])
def test_parse_colour(text, matrix, primaries, rng):
    colour = parse_colour(text)
    assert (colour.matrix, colour.primaries, colour.range) == (matrix, primaries, rng)


def test_probe_real_clip(tmp_path):
    info = probe(make_clip(tmp_path / "a.mp4", frames=12, fps="30000/1001"))
    assert (info.width, info.height, info.frame_count) == (480, 272, 12)
    assert info.fps == Fraction(30000, 1001)
    assert info.audio_codec == "aac" and info.rotation == 0


def test_probe_rotated_clip_reports_display_size(tmp_path):
    import subprocess

    plain = make_clip(tmp_path / "a.mp4", frames=5, audio=False)
    rotated = tmp_path / "rot.mp4"
    subprocess.run([ffmpeg_binary(), "-v", "error", "-display_rotation", "90", "-i", str(plain), "-c", "copy",
                    str(rotated)], check=True)
    info = probe(rotated)
    assert info.rotation in (90, 270)
    assert (info.width, info.height) == (272, 480)
    assert info.audio_codec is None


def test_probe_rejects_non_video(tmp_path):
    bogus = tmp_path / "notes.mp4"
    bogus.write_text("this is text")
    with pytest.raises(MediaError, match="notes.mp4: not a readable video, or damaged"):
        probe(bogus)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(MediaError, match="empty.mp4: file is empty"):
        probe(empty)


# --- issue 10, class 4: valid files the probe must describe as ffmpeg decodes them -------------------------

def _decoded_count(path) -> int:
    import subprocess

    from facefusion_batch.video.ffmpeg import VIDEO_STREAM, local

    out = subprocess.run([ffmpeg_binary(), "-v", "error", "-i", local(path), "-map", VIDEO_STREAM, "-fps_mode",
                          "passthrough", "-f", "framecrc", "-"], capture_output=True, text=True, check=True).stdout
    return sum(1 for line in out.splitlines() if line and not line.startswith("#"))


def test_edit_list_counts_frames_shown_not_stored(tmp_path):
    import hostile_media

    path = tmp_path / "cut.mp4"
    hostile_media._edit_list_cut(path)
    info = probe(path)
    stored = _decoded_count(path)  # what a decoder shows
    assert info.frame_count == stored
    assert info.fps == 25 and not info.variable_frame_rate


def test_discarded_packets_are_not_counted():
    lines = ["#tb 0: 1/12800", "#media_type 0: video", "#codec_id 0: h264",
             "0, -1024, -512, 512, 10, 0x1, F=0x5", "0, -512, -1024, 512, 10, 0x1, F=0x4"]
    lines += [f"0, {t - 512}, {t}, 512, 10, 0x1, F=0x0" for t in range(0, 512 * 6, 512)]
    timing = frame_timing("\n".join(lines))
    assert (timing.count, timing.fps, timing.variable, timing.start) == (6, 25, False, 0.0)


@pytest.mark.parametrize("stamps", [
    ["-9223372036854775808"] * 5,  # no packet has a time
    ["0"] + ["-9223372036854775808"] * 4,  # only the first
    ["0", "0", "0", "0", "0"],  # all the same
])
def test_packets_without_pts_get_the_nominal_rate(stamps):
    lines = ["#tb 0: 1/1000"] + [f"0, -9223372036854775808, {s}, 1, 1, 0x0" for s in stamps]
    timing = frame_timing("\n".join(lines), Fraction(30000, 1001))
    assert (timing.count, timing.fps, timing.variable) == (5, Fraction(30000, 1001), False)
    assert frame_timing("\n".join(lines)).fps == 25  # no nominal rate known


def test_avi_without_pts(tmp_path):
    import hostile_media

    path = tmp_path / "raw.avi"
    hostile_media._no_pts_avi(path)
    info = probe(path)
    assert info.frame_count == hostile_media.FRAMES == _decoded_count(path)
    assert info.fps == 25


def test_sar_field_order_and_rotation(tmp_path):
    import hostile_media

    sar = probe(hostile_media._sar_clip(tmp_path / "sar.mp4"))
    assert (sar.width, sar.height, sar.sar, sar.picture.sar) == (360, 272, Fraction(4, 3), Fraction(4, 3))
    hostile_media._rotated_sar(tmp_path / "rot.mp4")
    rotated = probe(tmp_path / "rot.mp4")
    assert (rotated.width, rotated.height, rotated.rotation) == (272, 360, 270)
    assert rotated.picture.sar == Fraction(3, 4)  # the aspect turns with the picture
    hostile_media._interlaced("tt")(tmp_path / "tff.mp4")
    assert probe(tmp_path / "tff.mp4").field_order == "tt"


def test_cover_art_and_streams_before_the_video(tmp_path):
    import hostile_media

    hostile_media._cover_art_first(tmp_path / "cover.mp4")
    cover = probe(tmp_path / "cover.mp4")
    assert (cover.width, cover.height, cover.frame_count) == (480, 272, hostile_media.FRAMES)
    hostile_media._streams_before_video(tmp_path / "layout.mkv")
    layout = probe(tmp_path / "layout.mkv")
    assert (layout.width, layout.frame_count, layout.audio_codec) == (480, hostile_media.FRAMES, "aac")
    assert layout.subtitle_codecs == ("subrip",)


def test_start_offset_is_measured(tmp_path):
    import hostile_media

    hostile_media._start_offset(tmp_path / "late.mp4")
    assert abs(probe(tmp_path / "late.mp4").start_time - 0.4) < 0.01


@pytest.mark.parametrize("description, pixel_format, size, sar, field_order", [
    ("h264 (High) (avc1 / 0x31637661), yuv420p(tv, bt709, top first), 1920x1080 [SAR 4:3 DAR 16:9], 25 fps",
     "yuv420p", (1920, 1080), Fraction(4, 3), "tt"),
    ("hevc (Main 10) (hvc1 / 0x31637668), yuv420p10le(tv, bt2020nc/bt2020/smpte2084, bottom coded first "
     "(swapped)), 3840x2160, SAR 1:1 DAR 16:9, 59.94 fps", "yuv420p10le", (3840, 2160), Fraction(1), "bt"),
    ("rawvideo (I420 / 0x30323449), yuv420p, 64x48, 1 fps", "yuv420p", (64, 48), None, "progressive"),
    ("h264, none, 640x360", "none", (640, 360), None, "progressive"),
    ("wrapped_avframe, 640x360", "unknown", (640, 360), None, "progressive"),  # no pixel format at all
    ("prores (HQ) (apch / 0x68637061), yuv422p10le(tv, progressive, left), 1280x720, 23.98 fps",
     "yuv422p10le", (1280, 720), None, "progressive"),
    ("", "unknown", None, None, "progressive"),
])
def test_video_description_fields(description, pixel_format, size, sar, field_order):
    from facefusion_batch.video.probe import video_facts

    facts = video_facts(description)
    assert (facts["pixel_format"], facts["size"], facts["sar"], facts["field_order"]) == \
        (pixel_format, size, sar, field_order)


def test_metadata_text_cannot_pose_as_a_stream():
    from facefusion_batch.video.probe import describe_input

    text = ("Input #0, matroska,webm, from 'x.mkv':\n"
            "  Metadata:\n"
            "    title           : Stream #0:9: Video: h264, yuv420p, 99x99\n"
            "  Stream #0:0: Audio: opus, 48000 Hz, stereo\n"
            "    Metadata:\n"
            "      comment         : displaymatrix: rotation of 90.00 degrees\n"
            "  Stream #0:1(eng): Video: vp9 (Profile 0), yuv420p(tv, progressive), 64x48, 25 fps\n"
            "    Side data:\n"
            "      Display Matrix: rotation of -90.00 degrees\n"
            "Stream mapping:\n"
            "  Stream #0:1 -> #0:0 (copy)\n")
    streams, mapped, _ = describe_input(text)
    assert sorted(streams) == [0, 1] and mapped == 1
    assert streams[1].kind == "Video" and streams[0].kind == "Audio"
    from facefusion_batch.video.probe import _rotation
    assert _rotation(streams[0].extra) == 0 and _rotation(streams[1].extra) == 270


def test_streams_listed_under_a_program_are_found():
    from facefusion_batch.video.probe import _rotation, describe_input

    text = ("Input #0, mpegts, from 'x.mp4':\n"
            "  Duration: 00:00:00.42, start: 1.400000, bitrate: 1258 kb/s\n"
            "  Program 1 \n"
            "    Metadata:\n"
            "      service_name    : Service01\n"
            "    Stream #0:0[0x100]: Video: h264 (Main), yuv420p(tv, top first), 320x240 [SAR 4:3 DAR 16:9]\n"
            "      Side data:\n"
            "        displaymatrix: rotation of 90.00 degrees\n"
            "    Stream #0:1[0x101](und): Audio: aac (LC), 44100 Hz, mono, fltp, 70 kb/s\n"
            "Stream mapping:\n"
            "  Stream #0:0 -> #0:0 (copy)\n")
    streams, mapped, duration = describe_input(text)
    assert mapped == 0 and streams[1].kind == "Audio" and duration == 0.42
    assert _rotation(streams[0].extra) == 90 and _rotation(streams[1].extra) == 0


def test_timecode_of_a_camera_file(tmp_path):
    import hostile_media

    hostile_media._timecode_track(tmp_path / "cam.mov")
    info = probe(tmp_path / "cam.mov")
    assert info.timecode == "01:00:00:00" and info.frame_count == hostile_media.FRAMES
    assert probe(make_clip(tmp_path / "plain.mp4", frames=3, audio=False)).timecode is None


def test_a_constant_rate_with_one_gap_keeps_its_rate():
    """A stream-copy cut can leave a gap before its last frame: writing at the usual step moves one frame,
    the average rate would move them all."""
    stamps = [i * 512 for i in range(43)] + [45 * 512]
    lines = ["#tb 0: 1/12800"] + [f"0, {t}, {t}, 512, 1, 0x0" for t in stamps]
    timing = frame_timing("\n".join(lines))
    assert timing.variable and timing.fps == 25
    assert abs(timing.shift - 0.08) < 1e-9


@pytest.mark.parametrize("text, rotation", [
    ("rotation of -90.00 degrees", 270), ("rotation of 90.00 degrees", 90), ("rotation of 180.00 degrees", 180),
    ("rotation of 89.60 degrees", 90), ("rotation of 45.00 degrees", 0), ("rotation of -0.00 degrees", 0),
])
def test_rotation_counts_only_the_quarter_turns_ffmpeg_applies(text, rotation):
    from facefusion_batch.video.probe import _rotation

    assert _rotation([f"      displaymatrix: {text}"]) == rotation


@pytest.mark.parametrize("stamps", [
    [0, 0, 0, 0, 10 ** 12],  # one absurd jump: the step's rate rounds to 0 fps
    [0, 40, 80, 10 ** 12, 10 ** 12 + 40],  # a jump among regular steps (variable, average ~0 fps)
    [-(1 << 62), 0, 40, 80],
])
def test_absurd_timestamps_never_give_a_zero_rate(stamps):
    lines = ["#tb 0: 1/1000"] + [f"0, {t}, {t}, 1, 1, 0x0" for t in stamps]
    timing = frame_timing("\n".join(lines), Fraction(25))
    assert timing.count == len(stamps) and 0 < timing.fps <= 1000
