"""ffmpeg command builders are pure: checked here without running ffmpeg."""
from fractions import Fraction
from pathlib import Path

import pytest

from facefusion_batch.video import ffmpeg
from facefusion_batch.video.ffmpeg import Colour, EncodeOptions


def test_decode_keeps_every_frame_as_raw_bgr():
    args = ffmpeg.decode_command(Path("in.mp4"))
    assert args[args.index("-fps_mode") + 1] == "passthrough"
    assert args[args.index("-pix_fmt") + 1] == "bgr24"
    assert args[args.index("-map") + 1] == "0:V:0"  # not a cover picture
    assert args[-1] == "pipe:1"


def test_encode_uses_exact_rate_quality_and_source_colour():
    options = EncodeOptions("libx264", "veryfast", 80)
    args = ffmpeg.encode_command(Path("c.mp4"), 640, 360, Fraction(30000, 1001), options,
                                 Colour("bt709", "bt709", "bt709", "tv"), "yuv420p", "mp4")
    assert args[args.index("-r") + 1] == "30000/1001"
    assert args[args.index("-s") + 1] == "640x360"
    assert args[args.index("-crf") + 1] == "10"
    assert args[args.index("-vf") + 1].startswith("scale=out_color_matrix=bt709:out_range=limited,setparams=")
    assert args[args.index("-colorspace") + 1] == "bt709"
    assert args[args.index("-color_range") + 1] == "tv"
    assert args[-1] == "file:" + str(Path("c.mp4").absolute())
    assert "-bf" not in args


def test_avi_gets_no_bframes_and_pixel_formats():
    args = ffmpeg.encode_command(Path("c.avi"), 64, 64, Fraction(25), EncodeOptions("libx264", "fast", 80),
                                 Colour(), "yuv420p", "avi")
    assert args[args.index("-bf") + 1] == "0"
    assert ffmpeg.output_pixel_format(479, 270, "yuv420p") == "yuv444p"
    assert ffmpeg.output_pixel_format(480, 270, "yuv444p") == "yuv444p"
    assert ffmpeg.output_pixel_format(480, 270, "yuv420p10le") == "yuv420p"


def test_auto_encoder_per_container():
    assert ffmpeg.resolve_encoder("auto", "webm") == "libvpx-vp9"
    assert ffmpeg.resolve_encoder("auto", "mp4") == "libx264"
    assert ffmpeg.resolve_encoder("libx265", "mkv") == "libx265"


def test_error_line_names_the_cause():
    log = (b"[libx264 @ 0x55a3bd5e0400] width not divisible by 2 (479x271)\n"
           b"[vost#0:0/libx264 @ 0x55a] [enc:libx264 @ 0x55a] Error while opening encoder - maybe incorrect\n"
           b"Conversion failed!\n")
    assert ffmpeg.error_line(log) == "width not divisible by 2 (479x271)"
    assert ffmpeg.error_line(b"Conversion failed!\n") == "Conversion failed!"
    assert ffmpeg.error_line(b"") == "ffmpeg failed"


def test_untagged_source_gets_no_colour_conversion():
    assert ffmpeg.colour_args(Colour()) == []


@pytest.mark.parametrize("container, codec, expected", [
    ("mp4", "aac", ["-c:a", "copy"]),
    ("mp4", "flac", ["-c:a", "aac", "-b:a", "192k"]),  # Debian's ffmpeg 5.1 can't put FLAC in MP4
    ("mov", "pcm_s16le", ["-c:a", "copy"]),
    ("mkv", "flac", ["-c:a", "copy"]),
    ("webm", "aac", ["-c:a", "libopus", "-b:a", "160k"]),
    ("webm", "opus", ["-c:a", "copy"]),
    ("mp4", None, []),
])
def test_audio_is_copied_only_where_the_container_takes_it(container, codec, expected):
    assert ffmpeg.audio_args(container, codec) == expected


def test_webm_needs_vp9():
    assert ffmpeg.check_encoder("webm", "libx264") is not None
    assert ffmpeg.check_encoder("webm", "libvpx-vp9") is None
    assert ffmpeg.check_encoder("mp4", "libx264") is None


def test_mux_maps_audio_metadata_and_marking_tags():
    args = ffmpeg.mux_command(Path("list.txt"), Path("orig.mp4"), Path("out.tmp.mp4"), "mp4", "aac",
                              {"ai_modified": "true", "comment": "AI-modified"})
    assert args[args.index("-f") + 1] == "concat"
    assert "1:a?" in args and "-map_metadata" in args
    assert "ai_modified=true" in args and "comment=AI-modified" in args
    assert "+faststart+use_metadata_tags" in args
    assert args[-3:] == ["-f", "mp4", "file:" + str(Path("out.tmp.mp4").absolute())]


def test_concat_list_quotes_paths(tmp_path):
    chunk = tmp_path / "it's here.mp4"
    text = ffmpeg.concat_list([chunk])
    assert text == f"file 'file:{str(chunk.resolve()).replace(chr(39), chr(39) + chr(92) + chr(39) + chr(39))}'\n"


@pytest.mark.parametrize("encoder, flag, value", [
    ("libx264", "-crf", "0"), ("libx265", "-crf", "0"), ("libvpx-vp9", "-crf", "0"), ("h264_nvenc", "-cq", "0"),
])
def test_best_quality_maps_to_lowest_rate_factor(encoder, flag, value):
    args = EncodeOptions(encoder, "medium", 100).rate_args()
    assert args[args.index(flag) + 1] == value


def test_container_names():
    assert ffmpeg.container_of(Path("a.M4V")) == "mp4"
    assert ffmpeg.container_of(Path("a.mkv")) == "mkv"


def test_level_tagged_log_splits_into_description_and_errors():
    log = (b"[info] Input #0, mov,mp4, from 'a.mp4':\n"
           b"[info]   Stream #0:0[0x1](und): Video: h264 (High), yuv420p(progressive), 64x48\n"
           b"[h264 @ 0x55d0c0] [warning] deprecated pixel format\n"
           b"[h264 @ 0x55d0c0] [error] Invalid NAL unit size (3321 > 82).\n"
           b"[fatal] Error opening input files: Invalid data\n")
    text, errors = ffmpeg.split_levels(log)
    assert text.splitlines() == ["Input #0, mov,mp4, from 'a.mp4':",
                                 "  Stream #0:0[0x1](und): Video: h264 (High), yuv420p(progressive), 64x48",
                                 "deprecated pixel format"]
    assert ffmpeg.error_line(errors) == "Invalid NAL unit size (3321 > 82)."
    assert b"[error]" not in errors and b"Error opening input files" in errors


@pytest.mark.parametrize("name", ["concat:a.mp4|b.mp4", "file:a.mp4", "pipe:1.mp4", "subfile,,start,0,end,0,,:a.mp4",
                                  "data:video/mp4;base64,AAAA.mp4", "http://example.com/a.mp4", "-i.mp4"])
def test_every_path_reaches_ffmpeg_as_an_absolute_file_url(name):
    path = Path(name)
    expected = "file:" + str(Path.cwd() / name)
    assert ffmpeg.local(path) == expected
    assert expected in ffmpeg.probe_command(path) and expected in ffmpeg.decode_command(path)
    assert ffmpeg.encode_command(path, 64, 64, Fraction(25), EncodeOptions("libx264", "fast", 80), Colour(),
                                 "yuv420p", "mp4")[-1] == expected
    mux = ffmpeg.mux_command(path, path, path, "mp4", None, {})
    assert mux[mux.index("-i") + 1] == expected and mux[-1] == expected
    assert ffmpeg.concat_list([path]) == f"file '{expected}'\n"


def test_encoder_keeps_sample_aspect_ratio_and_fields_in_one_filter_chain():
    from facefusion_batch.video.ffmpeg import Picture

    args = ffmpeg.encode_command(Path("c.mp4"), 640, 480, Fraction(25), EncodeOptions("libx264", "fast", 80),
                                 Colour("bt709", None, None, "tv"), "yuv420p", "mp4", Picture(Fraction(4, 3), "bb"))
    assert args.count("-vf") == 1
    assert args[args.index("-vf") + 1] == ("scale=out_color_matrix=bt709:out_range=limited,"
                                           "setparams=colorspace=bt709:range=tv,setsar=4/3")
    assert args[args.index("-x264-params") + 1] == "bff=1" and args[args.index("-field_order") + 1] == "bb"
    plain = ffmpeg.encode_command(Path("c.mp4"), 64, 64, Fraction(25), EncodeOptions("libx264", "fast", 80),
                                  Colour(), "yuv420p", "mp4", Picture())
    assert "-vf" not in plain and "-field_order" not in plain


@pytest.mark.parametrize("container, codecs, kept, dropped", [
    ("mkv", ["subrip", "hdmv_pgs_subtitle", "mov_text"], ["copy", "copy", "subrip"], []),
    ("mp4", ["subrip", "ass", "dvd_subtitle"], ["mov_text", "mov_text"], ["dvd_subtitle"]),
    ("mov", ["mov_text"], ["mov_text"], []),
    ("webm", ["subrip", "dvd_subtitle"], ["webvtt"], ["dvd_subtitle"]),
    ("avi", ["subrip"], [], ["subrip"]),
    ("mp4", [], [], []),
])
def test_subtitles_kept_where_the_container_can_hold_them(container, codecs, kept, dropped):
    args, lost = ffmpeg.subtitle_args(container, codecs)
    assert [args[i + 3] for i in range(0, len(args), 4)] == kept
    assert [args[i + 2] for i in range(0, len(args), 4)] == [f"-c:s:{n}" for n in range(len(kept))]
    assert lost == dropped


def test_mux_starts_the_video_where_the_original_did():
    args = ffmpeg.mux_command(Path("l.txt"), Path("o.mp4"), Path("out.mp4"), "mp4", "aac", {}, video_start=0.4)
    assert args[args.index("-itsoffset") + 1] == "0.400000"
    assert args.index("-itsoffset") < args.index("concat")
    assert "-itsoffset" not in ffmpeg.mux_command(Path("l.txt"), Path("o.mp4"), Path("out.mp4"), "mp4", "aac", {})


def test_each_audio_track_is_copied_or_converted_on_its_own():
    assert ffmpeg.audio_track_args("mp4", ["aac", "flac"]) == ["-c:a:0", "copy", "-c:a:1", "aac", "-b:a:1", "192k"]
    assert ffmpeg.audio_track_args("mkv", ["aac", "flac"]) == ["-c:a:0", "copy", "-c:a:1", "copy"]
    args = ffmpeg.mux_command(Path("l.txt"), Path("o.mp4"), Path("out.mp4"), "mp4", "aac", {},
                              audio_codecs=["aac", "flac"])
    assert "-c:a:1" in args and "-c:a" not in args


def test_cover_pictures_kept_only_where_the_container_can():
    assert ffmpeg.cover_args("mp4", [2], tagged=False) == ["-map", "1:2", "-disposition:v:1", "attached_pic"]
    assert ffmpeg.cover_args("mp4", [2], tagged=True) == []  # the marking's tags and covr exclude each other
    assert ffmpeg.cover_args("mkv", [0], tagged=False) == []
