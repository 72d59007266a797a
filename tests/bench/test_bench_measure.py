import time

from facefusion_batch.bench.measure import DiskSampler, peak_rss_bytes, tree_size


def test_tree_size_sums_files_recursively(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b").mkdir()
    (tmp_path / "x.bin").write_bytes(b"1" * 100)
    (tmp_path / "a" / "b" / "y.bin").write_bytes(b"1" * 23)
    assert tree_size(tmp_path) == 123
    assert tree_size(tmp_path / "missing") == 0


def test_sampler_sees_a_file_that_came_and_went(tmp_path):
    with DiskSampler(tmp_path, interval=0.005) as sampler:
        time.sleep(0.03)
        big = tmp_path / "frame.bmp"
        big.write_bytes(b"0" * 200_000)
        deadline = time.monotonic() + 120  # until a sample saw it: a loaded machine may not sample for a while
        while sampler.peak < 200_000 and time.monotonic() < deadline:
            time.sleep(0.01)
        big.unlink()
        time.sleep(0.03)
    assert sampler.peak == 200_000
    assert tree_size(tmp_path) == 0


def test_peak_rss_is_plausible():
    rss = peak_rss_bytes()
    assert rss is None or 10_000_000 < rss < 100_000_000_000


def test_sampler_counts_its_own_cpu_so_the_benchmark_can_leave_it_out(tmp_path):
    # The sampler's walks of the temp tree are the benchmark's work: the worker takes its thread's CPU seconds
    # (`cpu`) out of ffb's. They are its thread's alone: this thread's busy loop does not count.
    for index in range(300):
        (tmp_path / f"{index}.part").write_bytes(b"0")
    with DiskSampler(tmp_path, interval=0.02) as sampler:
        deadline = time.monotonic() + 120
        while sampler.cpu <= 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        spun = time.thread_time()
        while time.thread_time() - spun < 0.3:
            pass
    assert 0 < sampler.cpu < 0.15
