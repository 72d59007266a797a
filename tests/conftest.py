"""Shared fixtures: stand-in neural models, real faces, and short real clips made with ffmpeg."""
from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import Callable

import cv2
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

import standins  # noqa: E402

from facefusion_batch.video.ffmpeg import SWS_FLAGS, ffmpeg_binary  # noqa: E402

FRAME_W, FRAME_H = 480, 272
# Where the clip fixture puts the face, in frame pixels: box and five points (eyes, nose, mouth corners).
FACE_BOX = np.array([180, 60, 300, 210], dtype=np.float32)
FACE_KPS = np.array([[212, 120], [268, 120], [240, 150], [218, 180], [262, 180]], dtype=np.float32)


def cpu_session(path: Path):
    """A CPU ONNX Runtime session with the project's session options, for adapter tests."""
    from facefusion_batch.models.sessions import ort

    rt = ort()
    options = rt.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.intra_op_num_threads = 2
    return rt.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def astronaut_face() -> np.ndarray:
    """The real face of scikit-image's astronaut (NASA, public domain), BGR, cropped around the head."""
    from skimage import data

    return cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2BGR)[20:240, 150:330]


def astronaut_photo() -> np.ndarray:
    """scikit-image's whole astronaut photo (NASA, public domain), BGR, 512 x 512."""
    from skimage import data

    return cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2BGR)


def grace_hopper() -> np.ndarray:
    """matplotlib's Grace Hopper photo (US Navy, public domain), BGR."""
    import matplotlib

    path = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    return cv2.imread(str(path))


@contextlib.contextmanager
def hopper_processor(folder: Path, image: np.ndarray | None = None, **settings):
    """An offline frame processor in mode many with Grace Hopper as the source (or `image`; cache and temp in
    `folder`; `settings` on top), its engine closed on leaving."""
    from facefusion_batch.settings import load_settings
    from facefusion_batch.workflow.processor import prepare

    source = folder / "hopper.png"
    cv2.imwrite(str(source), grace_hopper() if image is None else image)
    loaded = load_settings(None, {}, {"engine": "offline", "face_selector_mode": "many", "cache_path": folder / "cache",
                                      "temp_path": folder / "temp", **settings}).settings
    made = prepare(loaded, source, lambda message: None)
    try:
        yield made
    finally:
        made.engine.close()


def run_video(processor, frames: list[np.ndarray]) -> list[np.ndarray]:
    """`frames` processed as one chunk of a video is: planned by the motion gate, processed in frame order (each
    frame a copy, the originals left as they are), finished once held back for faces found late."""
    from concurrent.futures import ThreadPoolExecutor

    from facefusion_batch.workflow.analysis import thumbnail
    from facefusion_batch.workflow.chunks import processed

    gate = processor.new_gate()

    def planned():
        for index, frame in enumerate(frames):
            yield (frame.copy(), *gate.reference_for(index, thumbnail(frame), frame.shape[1]), index)

    with ThreadPoolExecutor(1) as pool:
        return [frame for frame, _ in processed(pool, processor, processor, planned(), 1, 0)]


def face_frame() -> np.ndarray:
    """A frame with a textured background and the astronaut's face inside FACE_BOX."""
    rng = np.random.default_rng(1)
    frame = cv2.GaussianBlur(rng.integers(40, 200, (FRAME_H, FRAME_W, 3), dtype=np.uint8), (0, 0), 3)
    x1, y1, x2, y2 = FACE_BOX.astype(int)
    frame[y1:y2, x1:x2] = cv2.resize(astronaut_face(), (x2 - x1, y2 - y1))
    return frame


def faint_when_toned(depths: list[float]) -> Callable[..., np.ndarray]:
    """A stand-in for `classic.swap_face` whose swap, toned (``own_depth`` 0, its default), changes the face by a
    grey level (too faint to see), and is the real swap at any other depth; each call's ``own_depth`` goes into
    ``depths``."""
    from facefusion_batch.offline import classic

    swap_face = classic.swap_face

    def swap(frame, landmarks, texture, **kwargs):
        depths.append(kwargs.get("own_depth", 0.0))
        if not depths[-1]:
            return np.clip(frame.astype(np.int16) + 1, 0, 255).astype(np.uint8)
        return swap_face(frame, landmarks, texture, **kwargs)
    return swap


def detector_faces(scale: float) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(FACE_BOX * scale, FACE_KPS * scale)]


@pytest.fixture(scope="session")
def neural_models(tmp_path_factory) -> Path:
    """A FaceFusion-layout models dir (.onnx + .hash) of stand-ins whose detector finds FACE_BOX."""
    directory = tmp_path_factory.mktemp("models")
    scale = 640 / max(FRAME_W, FRAME_H)
    standins.build_inswapper(directory / "inswapper_128.onnx")
    standins.build_arcface(directory / "arcface_w600k_r50.onnx")
    standins.build_scrfd(directory / "scrfd_2.5g.onnx", detector_faces(scale))
    standins.build_yoloface(directory / "yoloface_8n.onnx", detector_faces(scale))
    standins.build_retinaface(directory / "retinaface_10g.onnx", detector_faces(scale))
    standins.build_yunet(directory / "yunet_2023_mar.onnx", detector_faces(scale))
    # what FaceFusion's filled-in ini asks for (processors face_swapper face_enhancer, mask box occlusion)
    standins.build_gfpgan(directory / "gfpgan_1.4.onnx")
    standins.build_occluder(directory / "xseg_1.onnx", np.ones((256, 256), np.float32))
    for model in directory.glob("*.onnx"):
        standins.write_facefusion_hash(model)
    return directory


@pytest.fixture
def env_with(tmp_path, monkeypatch) -> Callable[..., Path]:
    """`env_with(models)`: the tmp dir, with the neural engine on the stand-ins in `models`, two threads, and
    cache/temp dirs inside the tmp dir (for tests that build their own models dir). `engine=None` leaves the
    engine and the threads to ffb (`auto`: offline where `models` holds none)."""
    def select(models: Path | None, engine: str | None = "neural") -> Path:
        return selected(monkeypatch, tmp_path, models, engine)
    return select


def selected(patch: pytest.MonkeyPatch, root: Path, models: Path | None, engine: str | None = "neural") -> Path:
    """`root` as `env_with` makes it, through `patch` (a test's monkeypatch, or a module fixture's
    `pytest.MonkeyPatch.context()`)."""
    if models is None:  # models_path left at its default (set, it would ask for the neural engine): empty
        patch.setenv("XDG_CACHE_HOME", str(root / "xdg"))
        patch.delenv("FFB_MODELS_PATH", raising=False)
    for name, value in (("MODELS_PATH", models), ("CACHE_PATH", root / "cache"), ("TEMP_PATH", root / "tmp")):
        if value is not None:
            patch.setenv(f"FFB_{name}", str(value))
    if engine is not None:
        patch.setenv("FFB_ENGINE", engine)
        patch.setenv("FFB_EXECUTION_THREAD_COUNT", "2")
    return root


@pytest.fixture
def offline_env(env_with, tmp_path) -> Path:
    """The tmp dir, with no neural models (engine auto: offline) and cache/temp dirs inside it."""
    return env_with(None, engine=None)


@pytest.fixture
def env(env_with, neural_models) -> Path:
    """A tmp dir with the stand-in neural models selected and cache/temp dirs inside it."""
    return env_with(neural_models)


def make_clip(path: Path, frames: int = 30, fps: str = "25", audio: bool = True, extra: list[str] | None = None,
              image: np.ndarray | None = None) -> Path:
    """Encode `frames` copies of `image` (default: face_frame) with a slowly moving noise strip and a tone."""
    image = face_frame() if image is None else image
    height, width = image.shape[:2]
    video = []
    for i in range(frames):
        frame = image.copy()
        frame[height - 20:, :] = (i * 7) % 255  # something changes each frame
        video.append(frame)
    command = [ffmpeg_binary(), "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "bgr24",
               "-s", f"{width}x{height}", "-r", fps, "-i", "-"]
    if audio:
        command += ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100", "-shortest", "-c:a", "aac"]
    command += [*SWS_FLAGS, "-c:v", "libx264", "-preset", "ultrafast", "-crf", "12", "-pix_fmt", "yuv420p", *(extra or []),
                str(path)]
    subprocess.run(command, input=b"".join(f.tobytes() for f in video), check=True)
    return path


def decode_all(path: Path) -> np.ndarray:
    """Every frame of a video as one (N, H, W, 3) array (rotation applied), for comparisons."""
    from facefusion_batch.video.probe import probe

    info = probe(path)
    raw = subprocess.run([ffmpeg_binary(), "-v", "error", "-i", str(path), "-map", "0:v:0", *SWS_FLAGS, "-fps_mode",
                          "passthrough", "-f", "rawvideo", "-pix_fmt", "bgr24", "-"], capture_output=True,
                         check=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, info.height, info.width, 3)


@pytest.fixture
def source_image(tmp_path) -> Path:
    path = tmp_path / "source.png"
    cv2.imwrite(str(path), face_frame())
    return path


def run_local(settings, source: Path, specs: list[str], reporter=None, journal=None, processor=None, **options):
    """One batch on the local executor without the output lock (what `facefusion_batch.run` adds)."""
    from facefusion_batch.runner.driver import run_batch
    from facefusion_batch.executors.local import LocalExecutor
    from facefusion_batch.runner.progress import QuietReporter

    with LocalExecutor(settings, source, processor=processor) as executor:
        return run_batch(settings, specs, executor, reporter or QuietReporter(), journal, **options)
