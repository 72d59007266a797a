import threading
import time

from facefusion_batch.timing import Timings, delta, timed, timed_iter


def test_measure_accumulates_seconds_and_counts():
    timings = Timings()
    for _ in range(3):
        with timings.measure("swap"):
            time.sleep(0.002)
    timings.add("detect", 0.5, count=2)
    snap = timings.snapshot()
    assert snap["swap"]["count"] == 3 and 0.005 < snap["swap"]["seconds"] < 30.0
    assert snap["detect"] == {"seconds": 0.5, "count": 2}


def test_measure_counts_time_when_the_block_raises():
    timings = Timings()
    try:
        with timings.measure("detect"):
            raise ValueError
    except ValueError:
        pass
    assert timings.snapshot()["detect"]["count"] == 1


def test_threads_lose_no_updates():
    timings = Timings()

    def work():
        for _ in range(2000):
            timings.add("track", 0.001)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    snap = timings.snapshot()["track"]
    assert snap["count"] == 16000 and abs(snap["seconds"] - 16.0) < 1e-6


def test_snapshot_is_a_copy():
    timings = Timings()
    timings.add("decode", 1.0)
    snap = timings.snapshot()
    timings.add("decode", 1.0)
    assert snap["decode"]["seconds"] == 1.0


def test_timed_without_timings_is_a_shared_no_op():
    assert timed(None, "a") is timed(None, "b")
    with timed(None, "a"):
        pass
    timings = Timings()
    with timed(timings, "a"):
        pass
    assert timings.snapshot()["a"]["count"] == 1


def test_timed_iter_measures_each_item_and_passes_items_through():
    items = [1, 2, 3]
    assert timed_iter(items, None, "decode") is items
    timings = Timings()
    assert list(timed_iter(iter(items), timings, "decode")) == items
    assert timings.snapshot()["decode"]["count"] == 3  # the final, empty next() adds time but no count


def test_delta_is_what_happened_between_snapshots():
    timings = Timings()
    timings.add("probe", 1.0)
    before = timings.snapshot()
    timings.add("probe", 0.25)
    timings.add("encode", 2.0)
    change = delta(timings.snapshot(), before)
    assert change == {"probe": {"seconds": 0.25, "count": 1}, "encode": {"seconds": 2.0, "count": 1}}
