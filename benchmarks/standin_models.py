"""A FaceFusion-layout models directory of stand-ins that do real work, for `ffb benchmark --engine neural`.

    python benchmarks/standin_models.py DIR [--face examples/source.jpg] [--convs 3] [--channels 32] [--fixed-batch]
    FFB_MODELS_PATH=DIR ffb benchmark 360p --engine neural [--profile chain.ini]

Every file has the real model's name, tensor names, shapes and dtypes (the tests' stand-ins, tests/standins.py)
and FaceFusion's `<name>.hash` sidecar (CRC32), so ffb (and FaceFusion) load them as the real files; the
face landmarkers (2dfan4, peppa_wutz, fan_68_5) are there for `--face-mask-types area`. The
detectors "find" the face where `ffb benchmark` composes it into its clips (found once here with the offline
engine's MediaPipe detector), so every frame has its one face. The swapper (hyperswap_1a_256, FaceFusion's
default) and the enhancer (gfpgan_1.4) carry a stack of `--convs` 3x3 convolutions `--channels` wide whose
result is multiplied by zero: the compute of a network, an exact output. The real GFPGAN 1.4 (~45 GFLOPs at
512) and hyperswap are larger than the default stacks: absolute times are a floor; ratios are what to read.
Not part of the product or CI: a benchmark fixture.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import standins  # noqa: E402

DETECTOR_SIZE = 640
BENCH_FRAME = (640, 360)  # the clips are 16:9; the detectors see them letterboxed to 640 wide


def gflops(size: int, convs: int, channels: int) -> float:
    widths = [3] + [channels] * (convs - 1) + [3] if convs else []
    return sum(size * size * 9 * 2 * a * b for a, b in zip(widths, widths[1:])) / 1e9


def bench_face(photo: Path) -> tuple[np.ndarray, np.ndarray]:
    """Box and five keypoints of the face in a 640x360 benchmark still, as the offline engine finds them."""
    import os

    from facefusion_batch.bench.clips import compose
    from facefusion_batch.engines import build_engine
    from facefusion_batch.media import read_image
    from facefusion_batch.settings import load_settings

    settings = load_settings(None, os.environ, {"engine": "offline"}).settings
    engine = build_engine(settings)
    try:
        faces = engine.detect(compose(read_image(photo)[:, ::-1], BENCH_FRAME))  # the clips mirror the photo
    finally:
        engine.close()
    if len(faces) != 1:
        raise SystemExit(f"{photo}: expected one face in the benchmark still, found {len(faces)}")
    return faces[0].box.astype(np.float32), faces[0].kps.astype(np.float32)


def build(directory: Path, face: tuple[np.ndarray, np.ndarray], convs: int = 3, channels: int = 32,
          dynamic_batch: bool = True) -> list[Path]:
    """Write the stand-ins and their .hash sidecars into `directory`; return the model paths."""
    directory.mkdir(parents=True, exist_ok=True)
    faces = [face]  # the still is 640 wide: detector pixels are frame pixels
    paths = [directory / name for name in (
        "inswapper_128.onnx", "arcface_w600k_r50.onnx", "scrfd_2.5g.onnx", "yoloface_8n.onnx",
        "hyperswap_1a_256.onnx", "gfpgan_1.4.onnx", "xseg_1.onnx", "bisenet_resnet_34.onnx", "2dfan4.onnx",
        "peppa_wutz.onnx", "fan_68_5.onnx")]
    standins.build_inswapper(paths[0], dynamic_batch=dynamic_batch)
    standins.build_arcface(paths[1])
    standins.build_scrfd(paths[2], faces, DETECTOR_SIZE)
    standins.build_yoloface(paths[3], faces, DETECTOR_SIZE)
    standins.build_swapper(paths[4], 256, mode="identity", dynamic_batch=dynamic_batch, convs=convs,
                           channels=channels)
    standins.build_enhancer(paths[5], 512, "identity", dynamic_batch=dynamic_batch, convs=convs, channels=channels)
    standins.build_occluder(paths[6], np.ones((256, 256), np.float32), dynamic_batch)
    standins.build_parser(paths[7], np.ones((512, 512), np.int64), dynamic_batch)  # all skin
    # the area mask's landmarkers (batch axis 1, as FaceFusion feeds them): points follow a strong blue (2dfan4)
    # or red (peppa_wutz) in their crop, else the crop's centre; fan_68_5 places a face shape by the nose
    standins.build_2dfan4(paths[8])
    standins.build_peppa_wutz(paths[9])
    standins.build_fan_68_5(paths[10])
    for path in paths:
        standins.write_facefusion_hash(path)
    return paths


# FaceFusion 3.8.1's content analyser (facefusion/content_analyser.py): input `input`, its size, one output whose
# scores FaceFusion reads as below; zeros never flag, so FaceFusion goes on to the swap as with a harmless clip.
_NSFW = {"nsfw_1": (640, (1, 5, 8400)), "nsfw_2": (384, (1, 2)), "nsfw_3": (448, (1, 4))}


def build_facefusion_only(directory: Path) -> list[Path]:
    """The models FaceFusion loads and ffb's benchmark does not: nsfw_1/2/3 (never flag) and fairface."""
    paths = []
    for name, (size, shape) in _NSFW.items():
        paths.append(standins.build_constant(directory / f"{name}.onnx", [1, 3, size, size], np.zeros(shape, np.float32)))
    paths.append(standins.build_fairface(directory / "fairface.onnx"))
    for path in paths:
        standins.write_facefusion_hash(path)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--face", type=Path, default=ROOT / "examples" / "source.jpg",
                        help="The face photo ffb benchmark composes its clips from (default: its default).")
    parser.add_argument("--convs", type=int, default=3)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--fixed-batch", action="store_true", help="Batch axis 1 (one call per face).")
    args = parser.parse_args()
    paths = build(args.directory, bench_face(args.face), args.convs, args.channels, not args.fixed_batch)
    print(f"{len(paths)} stand-ins in {args.directory}: swapper {gflops(256, args.convs, args.channels):.2f}, "
          f"enhancer {gflops(512, args.convs, args.channels):.2f} GFLOPs/face")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
