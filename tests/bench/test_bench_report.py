from facefusion_batch.bench import report
from facefusion_batch.bench.report import METRICS, ratio, ratios, render, table_rows


def run(fps: float, **extra) -> dict:
    metrics = {m.key: 1.0 for m in METRICS}
    metrics.update(e2e_fps=fps, paste_ms=None, **extra)
    return metrics


def test_ratio_is_compare_over_base_and_none_when_undefined():
    assert ratio(10.0, 5.0) == 0.5
    assert ratio(0, 5.0) is None
    assert ratio(None, 5.0) is None
    assert ratio(2.0, None) is None


def test_ratios_cover_every_metric_of_resolutions_in_both():
    result = ratios({"720p": run(10.0), "240p": run(1.0)}, {"720p": run(15.0)})
    assert list(result) == ["720p"]
    assert set(result["720p"]) == {m.key for m in METRICS}
    assert result["720p"]["e2e_fps"] == 1.5 and result["720p"]["paste_ms"] is None


def test_table_has_a_column_per_resolution_and_drops_unmeasured_metrics():
    rows = table_rows(["240p", "720p"], {"240p": run(50.0), "720p": run(12.345)})
    assert rows[0] == ["metric", "240p", "720p"]
    labels = [row[0] for row in rows[1:]]
    assert "paste ms/frame" not in labels  # no run measured it
    fps = next(row for row in rows if row[0] == "end-to-end fps")
    assert fps == ["end-to-end fps", "50.0", "12.3"]


def test_compare_table_has_base_compare_and_ratio_per_resolution():
    rows = table_rows(["720p"], {"720p": run(10.0)}, {"720p": run(12.5, peak_temp_mb=0)})
    assert rows[0] == ["metric", "720p base", "720p compare", "ratio"]
    fps = next(row for row in rows if row[0] == "end-to-end fps")
    assert fps[1:] == ["10.0", "12.5", "1.25x"]
    temp = next(row for row in rows if row[0] == "peak temp disk MB")
    assert temp[1:] == ["1.0", "0.0", "0.00x"]


def test_missing_values_show_as_dashes():
    rows = table_rows(["720p"], {"720p": run(10.0, peak_rss_mb=None)}, {"720p": run(10.0)})
    rss = next(row for row in rows if row[0] == "peak RSS MB")
    assert rss[1:] == ["-", "1", "-"]


def test_render_aligns_columns():
    text = render([["metric", "240p"], ["end-to-end fps", "5.0"], ["peak RSS MB", "1234"]])
    lines = text.splitlines()
    assert lines[0] == "metric          240p"
    assert lines[1] == "--------------  ----"
    assert lines[2] == "end-to-end fps   5.0"
    assert lines[3] == "peak RSS MB     1234"
    assert report.NOTE
