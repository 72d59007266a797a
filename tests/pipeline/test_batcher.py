import threading
import time

import pytest

from facefusion_batch.pipeline.batcher import MicroBatcher


def test_items_from_many_threads_share_calls_and_keep_their_results():
    sizes = []

    def square_all(items):
        sizes.append(len(items))
        time.sleep(0.005)
        return [i * i for i in items]

    batcher = MicroBatcher(square_all, max_batch=4, max_wait=0.5)  # full batches go at once; a slow thread still joins
    results = {}

    def worker(start):
        for i in range(start, start + 10):
            results[i] = batcher(i)

    threads = [threading.Thread(target=worker, args=(k * 100,)) for k in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    batcher.close()
    assert results == {i: i * i for i in results} and len(results) == 40
    assert max(sizes) <= 4 and batcher.calls < 40 and batcher.mean_batch > 1.5


def test_map_batches_one_threads_items_and_errors_reach_every_waiter():
    batcher = MicroBatcher(lambda items: [x + 1 for x in items], max_batch=8, max_wait=0.001)
    assert batcher.map([1, 2, 3]) == [2, 3, 4]
    assert batcher.calls == 1

    def broken(items):
        raise ValueError("model failed")

    failing = MicroBatcher(broken, 8, 0.001)
    futures = [failing.submit(i) for i in range(3)]
    for future in futures:
        with pytest.raises(ValueError, match="model failed"):
            future.result(timeout=60)
    failing.close()
    batcher.close()
