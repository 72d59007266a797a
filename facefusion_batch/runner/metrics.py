"""Prometheus metrics of one run: what it did (targets, frames, faces), how long each stage and each model
call took, where it stands (backlog, frames in flight, last success) and what it runs on (engine, providers,
GPU utilisation and memory from NVML).

Every run has its own `CollectorRegistry` (no process-wide default registry): `ffb run --metrics-file` writes
it for node_exporter's textfile collector (`write_textfile`, atomic), a long-running process serves it over
HTTP (`serve`). The frame path feeds it through the hooks it already has: a `Reporter` (targets, frames), a
`Timings` listener (stages, faces), the session pool's `Timings` (inference per model): a few histogram
observations per frame, microseconds against the milliseconds a frame takes (docs/deploy.md has the numbers).

Names follow Prometheus conventions: `ffb_` prefix, base units (seconds, bytes, ratios), `_total` counters.
"""
from __future__ import annotations

import bisect
import contextlib
import itertools
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from prometheus_client import CollectorRegistry, Counter, Gauge, disable_created_metrics, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from facefusion_batch.version import __version__
from facefusion_batch.errors import OutputError, SettingsError
from facefusion_batch.runner.journal import FINISHED as SUCCESS  # a target finished
from facefusion_batch.runner.progress import Reporter
from facefusion_batch.timing import Timings
from facefusion_batch.workflow.outcome import STATUSES

# A counter's `*_created` twin (its creation time as a second series) doubles every counter for no use here:
# ffb_run_start_timestamp_seconds says when the run began. prometheus_client's switch is process-wide.
disable_created_metrics()
# Seconds: a stage of one frame takes ~1 ms (CPU tracking) to ~1 s (a big frame on a slow CPU); encode and
# verify of a chunk or a video take seconds to minutes.
STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
                 60.0, 300.0)
INFERENCE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
WRITE_EVERY = 15.0  # seconds between two writes of the metrics file during a run


class RunMetrics:
    """The metrics of one run, in their own registry.

    Wire it in with `reporter(inner)` (the run's reporter, teed) and `attach(batch)` (stage and inference
    timings, engine info); at the end `record_result(result)` adds what the reporter never saw (targets
    rejected before the batch started, an interrupted batch) so the counters match the run's summary.
    """

    def __init__(self, labels: Optional[dict[str, str]] = None, clock: Callable[[], float] = time.time) -> None:
        """`labels`: put on every series (e.g. the output directory, which tells apart several jobs whose
        files one node_exporter reads)."""
        r = self._own = CollectorRegistry()
        self._attached = False
        self.registry = r  # what to expose
        if labels:
            self.registry = CollectorRegistry()
            self.registry.register(_Labelled(r, labels))
        self._clock = clock
        self._lock = threading.Lock()
        self.targets = Counter("ffb_targets", "Targets ended, by status (done, no_face, skipped, failed).",
                               ["status"], registry=r)
        self._status = {status: self.targets.labels(status) for status in STATUSES}
        self._seen = dict.fromkeys(STATUSES, 0)
        self.frames = Counter("ffb_frames", "Video frames and images through the frame processor (also those "
                              "of targets that failed later).", registry=r)
        # Known only where the frames are processed in this process (attach): absent otherwise (Ray workers).
        self.faces = Counter("ffb_faces_swapped", "Faces swapped, summed over frames.", registry=None)
        self.in_flight = Gauge("ffb_frames_in_flight", "Video frames in the frame processor now.", registry=None)
        self.in_flight.set_function(lambda: self.stage_timings.active("frame"))
        self.stage_seconds = Histograms("ffb_stage_seconds", "Seconds per stage event: decode (one frame), "
                                        "detect, track, swap and paste (one frame), encode (one frame or "
                                        "chunk), probe and verify (one video).", "stage", STAGE_BUCKETS)
        self.frame_seconds = Histograms("ffb_frame_seconds", "Seconds a video frame spends in the frame "
                                        "processor (detect or track, swap, paste).", None, STAGE_BUCKETS)
        self.inference_seconds = Histograms("ffb_model_inference_seconds", "Seconds per ONNX Runtime call, by "
                                            "model file (a batched call counts once).", "model",
                                            INFERENCE_BUCKETS)
        for histograms in (self.stage_seconds, self.frame_seconds, self.inference_seconds):
            r.register(histograms)
        self.stage_timings = Timings(self._on_stage)
        self.inference_timings = Timings(self._on_inference)
        self.backlog = Gauge("ffb_backlog_targets", "Targets waiting: known to the run, not started, not "
                             "ended (under ffb watch also the files that are still settling).", registry=r)
        # `ffb watch` sets it: files its folders hold that were not handed to the run yet.
        self.waiting: Callable[[], int] = lambda: 0
        self.backlog.set_function(self._backlog)
        self.running = Gauge("ffb_targets_in_progress", "Targets started and not ended.", registry=r)
        self.last_success = Gauge("ffb_last_success_timestamp_seconds", "Unix time a target last finished "
                                  "(done or no face; from the journal before this run's first).", registry=r)
        self._last_success = 0.0
        self.start_time = self._clock()
        self._ended: Optional[float] = None
        Gauge("ffb_run_start_timestamp_seconds", "Unix time the run started.", registry=r).set(self.start_time)
        Gauge("ffb_run_duration_seconds", "Seconds since the run started, or its length once it ended.",
              registry=r).set_function(lambda: (self._ended or self._clock()) - self.start_time)
        self._expected = 0
        self._ended_targets = 0
        self._in_progress: dict[str, None] = {}  # started and not ended, oldest first
        self._engine: Callable[[], tuple[str, list[str]]] | None = None
        self._engine_seen: Optional[tuple[str, list[str]]] = None
        self.gpus = GpuCollector()
        r.register(_EngineInfo(self))
        r.register(self.gpus)

    # --- wiring ---------------------------------------------------------------------------------------

    def reporter(self, inner: Reporter) -> Reporter:
        """`inner`, with every event also counted here."""
        return MetricsReporter(self, inner)

    def attach(self, batch: Any) -> None:
        """Time the stages of `batch` (whatever passes `timings` to the frame path)
        and its engine's model calls into these metrics."""
        batch.timings = self.stage_timings
        self.attach_engine(batch.engine)

    def attach_engine(self, engine: Any) -> None:
        """Time the model calls of `engine` (its session pool's `timings`) and take the engine's name and
        providers from it. Frames are processed in this process from now on, so the faces and frames-in-flight
        series appear (fed through `stage_timings`, which the caller hands to the frame path)."""
        engine.pool.timings = self.inference_timings
        with self._lock:
            if not self._attached:
                self._attached = True
                self._own.register(self.faces)
                self._own.register(self.in_flight)
        self._engine = lambda: (engine.name, engine.pool.active_providers())

    def started(self, journal: Any) -> None:
        """The run holds its output tree: take the last success from its journal."""
        self.note_journal(journal)

    def note_journal(self, journal: Any) -> None:
        """Start `ffb_last_success_timestamp_seconds` from the journal (a cron run that finds nothing new
        still says when work last finished)."""
        latest = max((e.updated for e in journal.entries() if e.status in SUCCESS), default=None)
        if latest is not None:
            with self._lock:
                self._last_success = max(latest, self._last_success)
                self.last_success.set(self._last_success)

    def record_result(self, result: Any) -> None:
        """Count what the reporter never saw of a batch (a runner.batch.BatchResult: its rejected targets,
        the failure an interrupted batch records), so `ffb_targets_total` grows by the batch's summary; fix
        engine and providers. A long-running process calls it after each batch it runs."""
        counts = {status: sum(o.status == status for o in result.outcomes) for status in STATUSES}
        with self._lock:
            for status, count in counts.items():
                missing = count - self._seen[status]
                if missing > 0:
                    self._status[status].inc(missing)
            self._seen = dict.fromkeys(STATUSES, 0)  # the next batch starts counting afresh
            self._update_backlog()
        engine, providers = result.engine, list(result.providers)
        self._engine = lambda: (engine, providers)

    def end(self, result: Any) -> None:
        """The run is over: record its result (None: it ended before giving one); the duration stops."""
        if result is not None:
            self.record_result(result)
        with self._lock:
            self._ended = self._clock()
            self._in_progress.clear()  # what an interrupt cut short waits for the next run
            self._update_backlog()

    def close(self) -> None:
        self.gpus.close()

    # --- events ---------------------------------------------------------------------------------------

    def expect(self, targets: int) -> None:
        """A batch of `targets` begins (a long-running process tells each batch it starts): they are waiting."""
        with self._lock:
            self._expected += targets
            self._update_backlog()

    def start(self, name: str) -> None:
        with self._lock:
            self._in_progress.pop(name, None)
            self._in_progress[name] = None
            self._update_backlog()

    def finish(self, status: str, name: Optional[str]) -> None:
        with self._lock:
            key = name if name is not None else next(reversed(self._in_progress), None)
            if key is not None:
                self._in_progress.pop(key, None)
            if status in self._status:
                self._status[status].inc()
                self._seen[status] += 1
            self._ended_targets += 1
            if status in SUCCESS:
                self._last_success = self._clock()
                self.last_success.set(self._last_success)
            self._update_backlog()

    def _update_backlog(self) -> None:
        self.running.set(len(self._in_progress))

    def _backlog(self) -> int:
        with self._lock:
            known = max(0, self._expected - self._ended_targets - len(self._in_progress))
        return known + self.waiting()

    def _on_stage(self, name: str, seconds: float, count: int) -> None:
        if name == "faces":
            self.faces.inc(count)
        elif count != 1:  # 0: the wait for a stream's end; no event of its own
            return
        elif name == "frame":
            self.frame_seconds.observe("", seconds)
        else:
            self.stage_seconds.observe(name, seconds)

    def _on_inference(self, name: str, seconds: float, count: int) -> None:
        self.inference_seconds.observe(name, seconds)

    def engine_info(self) -> Optional[tuple[str, list[str]]]:
        """(engine, providers), read when collected; the last answer while a session is being created (the
        pool's sessions can't be listed from a scraping thread at that moment)."""
        if self._engine is not None:
            try:
                self._engine_seen = self._engine()
            except RuntimeError:  # dictionary changed size during iteration
                pass
        return self._engine_seen

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.registry)


class MetricsReporter:
    """A Reporter that counts every event into a RunMetrics, then hands it on to the reporter it wraps."""

    def __init__(self, metrics: RunMetrics, inner: Reporter) -> None:
        self._metrics, self._inner = metrics, inner

    def message(self, text: str) -> None:
        self._inner.message(text)

    def expect(self, targets: int) -> None:
        self._metrics.expect(targets)
        self._inner.expect(targets)

    def start(self, name: str, total: int) -> None:
        self._metrics.start(name)
        self._inner.start(name, total)

    def advance(self, frames: int) -> None:
        self._metrics.frames.inc(frames)
        self._inner.advance(frames)

    def finish(self, status: str, name: str | None = None) -> None:
        self._metrics.finish(status, name)
        self._inner.finish(status, name)

    def close(self) -> None:
        self._inner.close()


class Histograms:
    """A Prometheus histogram with one label (or none: `label` None), kept as one lock and a bisect per
    observation: prometheus_client's Histogram takes a lock per bucket and for the sum, several times the
    cost, on a path that runs a dozen times per frame."""

    def __init__(self, name: str, documentation: str, label: Optional[str], buckets: tuple[float, ...]) -> None:
        self._name, self._documentation, self._label = name, documentation, label
        self._bounds = tuple(float(b) for b in buckets)
        self._lock = threading.Lock()
        self._series: dict[str, tuple[list[int], list[float]]] = {}  # label value -> (counts per bucket, [sum])

    def observe(self, value: str, seconds: float) -> None:
        with self._lock:
            series = self._series.get(value)
            if series is None:
                series = self._series[value] = ([0] * (len(self._bounds) + 1), [0.0])
            series[0][bisect.bisect_left(self._bounds, seconds)] += 1
            series[1][0] += seconds

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self._name, self._documentation,
                                       labels=[self._label] if self._label else None)
        with self._lock:
            snapshot = {value: (list(counts), total[0]) for value, (counts, total) in self._series.items()}
        for value, (counts, total) in snapshot.items():
            cumulative = list(itertools.accumulate(counts))
            buckets = [(floatToGoString(bound), float(n)) for bound, n in zip(self._bounds, cumulative)]
            buckets.append(("+Inf", float(cumulative[-1])))
            family.add_metric([value] if self._label else [], buckets, total)
        yield family


class _Labelled:
    """Every series of a registry with constant labels added."""

    def __init__(self, inner: CollectorRegistry, labels: dict[str, str]) -> None:
        self._inner, self._labels = inner, dict(labels)

    def collect(self) -> Iterator[Metric]:
        for metric in self._inner.collect():
            labelled = Metric(metric.name, metric.documentation, metric.type, metric.unit)
            labelled.samples = [s._replace(labels={**self._labels, **s.labels}) for s in metric.samples]
            yield labelled


class _EngineInfo:
    """`ffb_engine_info{engine, provider, version} 1`, one series per provider the sessions really got
    (`none` before any model loaded), read when the metrics are collected."""

    def __init__(self, metrics: RunMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        info = self._metrics.engine_info()
        if info is None:
            return
        engine, providers = info
        family = GaugeMetricFamily("ffb_engine_info", "The face engine and the ONNX Runtime providers its "
                                   "sessions run on (always 1).", labels=["engine", "provider", "version"])
        for provider in providers or ["none"]:
            family.add_metric([engine, provider, __version__], 1)
        yield family


class GpuCollector:
    """GPU utilisation and memory per device from NVML (`nvidia-ml-py`), read at each collection. Without
    the library, the NVIDIA driver or a GPU it yields nothing: no GPU metric is ever made up."""

    def __init__(self) -> None:
        self._nvml = _nvml()

    def close(self) -> None:
        if self._nvml is not None:
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
            self._nvml = None

    def collect(self) -> Iterator[Metric]:
        nvml = self._nvml
        if nvml is None:
            return
        labels = ["gpu", "name"]
        utilization = GaugeMetricFamily("ffb_gpu_utilization_ratio", "Fraction of the last sample period the "
                                        "GPU was busy (NVML), 0..1.", labels=labels)
        used = GaugeMetricFamily("ffb_gpu_memory_used_bytes", "GPU memory in use, all processes (NVML).",
                                 labels=labels)
        total = GaugeMetricFamily("ffb_gpu_memory_total_bytes", "GPU memory installed (NVML).", labels=labels)
        for index, name, busy, memory in _devices(nvml):
            key = [str(index), name]
            if busy is not None:
                utilization.add_metric(key, busy / 100.0)
            if memory is not None:
                used.add_metric(key, float(memory.used))
                total.add_metric(key, float(memory.total))
        for family in (utilization, used, total):
            if family.samples:
                yield family


def _nvml() -> Any:
    """pynvml, initialised; None without the library or a usable NVIDIA driver."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        if pynvml.nvmlDeviceGetCount() < 1:
            pynvml.nvmlShutdown()
            return None
    except Exception:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...: no GPU to report on
        return None
    return pynvml


def _devices(nvml: Any) -> Iterator[tuple[int, str, Optional[int], Any]]:
    """(index, name, utilisation percent or None, memory info or None) per device; a device or a reading
    NVML refuses (MIG, a GPU fallen off the bus) is left out rather than failing the scrape."""
    try:
        count = nvml.nvmlDeviceGetCount()
    except nvml.NVMLError:
        return
    for index in range(count):
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = nvml.nvmlDeviceGetName(handle)
        except nvml.NVMLError:
            continue
        name = name.decode() if isinstance(name, bytes) else str(name)
        busy = memory = None
        with contextlib.suppress(nvml.NVMLError):
            busy = nvml.nvmlDeviceGetUtilizationRates(handle).gpu
        with contextlib.suppress(nvml.NVMLError):
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
        yield index, name, busy, memory


# --- output ---------------------------------------------------------------------------------------------


def check_metrics_file(path: Path) -> list[str]:
    """Fail now, before any work, when the metrics file can't be written; lines of advice otherwise."""
    directory = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise SettingsError(f"--metrics-file {path}: is a directory; name a file, e.g. {path / 'ffb.prom'}")
    if not directory.is_dir():
        raise OutputError(f"--metrics-file {path}: directory {directory} does not exist; create it (node_exporter"
                          "'s --collector.textfile.directory) or pass another path")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputError(f"--metrics-file {path}: directory {directory} is not writable; pass a path you can "
                          "write to")
    if path.suffix != ".prom":
        return [f"--metrics-file {path}: node_exporter's textfile collector reads only *.prom files"]
    return []


def write_textfile(registry: CollectorRegistry, path: Path) -> None:
    """Write the registry's metrics to `path` atomically: a hidden temporary file in the same directory (not
    named *.prom, so node_exporter never reads it half written), then a rename over `path`."""
    data = generate_latest(registry)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(partial, "wb") as stream:
            stream.write(data)
        os.chmod(partial, 0o644)  # node_exporter runs as its own user
        os.replace(partial, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise OutputError(f"--metrics-file {path}: can't write it ({exc.strerror or exc})") from None


class FileWriter:
    """Writes a registry to a file every `every` seconds on a thread of its own, and once more on `close`
    (the final numbers). A failed periodic write is told once through `on_error`; the run goes on."""

    def __init__(self, registry: CollectorRegistry, path: Path, every: float = WRITE_EVERY,
                 on_error: Callable[[str], None] = lambda line: None) -> None:
        self._registry, self._path, self._every, self._on_error = registry, path, every, on_error
        self._stop = threading.Event()
        self._failed = False
        self._thread = threading.Thread(target=self._run, name="ffb-metrics-file", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            try:
                write_textfile(self._registry, self._path)
            except OutputError as exc:
                if not self._failed:
                    self._failed = True
                    self._on_error(f"ffb: {exc}")

    def close(self) -> None:
        """Stop the thread and write the final metrics (raises OutputError when that fails)."""
        self._stop.set()
        self._thread.join()
        write_textfile(self._registry, self._path)


class FileMetrics(RunMetrics):
    """The metrics of an `ffb run --metrics-file PATH`: the path is checked at once (before any model loads);
    from `started` on (the run holds the output's lock) the file is written every `every` seconds, and a last
    time by `end`, whatever the run's fate. A run that never got the lock (another run holds the output:
    exit 6) leaves the file to the run that holds it. Advice and write errors go to the reporter given to
    `reporter()`."""

    def __init__(self, path: Path, labels: Optional[dict[str, str]] = None, every: float = WRITE_EVERY) -> None:
        advice = check_metrics_file(path)
        super().__init__(labels)
        self._path, self._every = path, every
        self._writer: Optional[FileWriter] = None
        self._told: list[str] = [f"ffb: {line}" for line in advice]
        self._message: Callable[[str], None] = self._told.append  # until reporter() names the reporter

    def reporter(self, inner: Reporter) -> Reporter:
        self._message = inner.message
        for line in self._told:
            inner.message(line)
        return super().reporter(inner)

    def started(self, journal: Any) -> None:
        """The run holds the output: take the last success from its journal and start writing the file."""
        self.note_journal(journal)
        self._writer = FileWriter(self.registry, self._path, self._every, lambda line: self._message(line))

    def end(self, result: Any) -> None:
        """Record the run's result (None: it ended before giving one) and write the file a last time."""
        super().end(result)
        try:
            if self._writer is not None:
                self._writer.close()
        except OutputError as exc:
            self._message(f"ffb: {exc}")
        finally:
            self.close()


class MetricsServer:
    """A `/metrics` HTTP endpoint for one registry, on a thread of its own; `port` is the one bound (useful
    when 0 asked for any free port)."""

    def __init__(self, server: Any, thread: threading.Thread) -> None:
        self._server, self._thread = server, thread
        self.address: str = server.server_address[0]
        self.port: int = server.server_address[1]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "MetricsServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(registry: CollectorRegistry, port: int, bind: str = "127.0.0.1") -> MetricsServer:
    """Serve `registry` at http://bind:port/metrics (and /) until `close()`. Localhost by default: expose it
    beyond the machine only on purpose (`bind='0.0.0.0'`): the endpoint has no authentication."""
    from prometheus_client import start_http_server

    try:
        server, thread = start_http_server(port, addr=bind, registry=registry)
    except OSError as exc:
        raise SettingsError(f"--metrics-port {port}: can't listen on {bind}:{port} ({exc.strerror or exc}); "
                            "pick a free port, or stop what holds it") from None
    return MetricsServer(server, thread)
