"""`ffb benchmark` sizes: names, and ranges over the ladder such as the design's own `240p..4k`."""
import pytest

from facefusion_batch.bench.runner import parse_resolutions
from facefusion_batch.cli import main
from facefusion_batch.errors import SettingsError


@pytest.mark.parametrize("names, expected", [
    (["240p..4k"], ("240p", "360p", "480p", "540p", "720p", "1080p", "1440p", "4k")),
    (["360p..1080p"], ("360p", "480p", "540p", "720p", "1080p")),
    (["240p..540p"], ("240p", "360p", "480p", "540p")),  # every size listed is on the ladder
    (["2160p", "1440p..2160p"], ("4k", "1440p")),  # FaceFusion's name of 4k
    (["720P..720p"], ("720p",)),
    (["540p", "240p..360p", "360p"], ("540p", "240p", "360p")),  # order kept, each size once
    (["1080p", "4K"], ("1080p", "4k")),
])
def test_ranges_expand_over_the_ladder(names, expected):
    assert parse_resolutions(names) == expected


@pytest.mark.parametrize("name, says", [
    ("240p..4k..8k", "not on the ladder"),
    ("240p..999p", "'999p' not on the ladder"),
    ("4k..240p", "write 240p..4k"),
    ("..720p", "not on the ladder"),
    ("999p", "unknown resolution 999p"),
])
def test_bad_sizes_say_what_is_allowed(name, says):
    with pytest.raises(SettingsError, match="240p..4k") as error:
        parse_resolutions([name])
    assert says in str(error.value)


def test_bad_range_is_exit_2_before_any_clip_is_made(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    assert main(["benchmark", "4k..240p"]) == 2
    assert "write 240p..4k" in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()


def test_help_names_ranges(capsys):
    assert main(["benchmark", "--help"]) == 0
    assert "240p..4k" in " ".join(capsys.readouterr().out.split())
