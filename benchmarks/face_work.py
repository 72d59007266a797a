"""Per-face work at 720p: the device path (DeviceChain: ONNX graphs through IO binding) against the CPU path
(ProcessorChain: numpy/OpenCV), both here on the CPU provider, as ratios in one run.

The models are identity stand-ins (their cost is a copy), so what is timed is the work around them: crop
warps, box mask, pastes, the enhancer blend, and for the device path the upload and download of the frame.
On CPU the device path is expected to be slower (whole-frame planar copies a GPU does in microseconds); the
number that matters is the same script's GPU run (benchmarks/gpu_check.sh), where the CPU path's cost is
host work that keeps the GPU waiting and the device path's is GPU work plus two copies of the frame.

    python benchmarks/face_work.py [--frames 20] [--faces 1 3] [--provider cpu|cuda]
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import numpy as np  # noqa: E402

from facefusion_batch.models.catalog import CATALOG  # noqa: E402
from facefusion_batch.models.sessions import GuardedSession, SessionPool  # noqa: E402
from facefusion_batch.processors.chain import ProcessorChain  # noqa: E402
from facefusion_batch.processors.device_chain import DeviceChain  # noqa: E402
from facefusion_batch.processors.enhancer import Enhancer, EnhancerOptions  # noqa: E402
from facefusion_batch.processors.masks import MaskOptions, Occluder  # noqa: E402
from facefusion_batch.processors.swapper import Swapper, SwapperOptions  # noqa: E402
from facefusion_batch.settings import load_settings  # noqa: E402
from processors.test_device_chain import _occluder, _scene  # noqa: E402  the tests' 720p real faces, XSeg stand-in
from standins import build_enhancer, build_swapper  # noqa: E402


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _time(chain, frame, faces, source, frames: int) -> tuple[float, float]:
    for _ in range(2):  # warm-up: sessions, arenas
        chain.process(frame.copy(), faces, source)
    copies = [frame.copy() for _ in range(frames)]
    wall, cpu = time.perf_counter(), _cpu()
    for copy in copies:
        chain.process(copy, faces, source)
    return (time.perf_counter() - wall) / frames, (_cpu() - cpu) / frames


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--faces", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--provider", default="cpu", help="cpu, or cuda on a GPU machine")
    args = parser.parse_args(argv)
    settings = load_settings(None, {}, {"execution_providers": f"{args.provider} cpu" if args.provider != "cpu"
                                        else "cpu"}).settings
    folder = Path(tempfile.mkdtemp(prefix="ffb-face-work-"))
    swap_path = build_swapper(folder / "hyperswap_1a_256.onnx", 256, mode="identity", source_gain=0.4,
                              dynamic_batch=True)
    enh_path = build_enhancer(folder / "gfpgan_1.4.onnx", 512, mode="identity", dynamic_batch=True)
    swap_spec, enh_spec = CATALOG["hyperswap_1a_256"], CATALOG["gfpgan_1.4"]
    xseg = _occluder(folder / "xseg_1.onnx", 3.0, 0.4)
    source = np.linspace(-0.3, 0.6, 512, dtype=np.float32).reshape(1, 512)
    host_pool, device_pool = SessionPool(settings, io_binding=False), SessionPool(settings, io_binding=True)
    slots = threading.Semaphore(2)

    def adapters(pool, enhance, occlusion):
        swapper = Swapper(GuardedSession(pool, swap_path, slots, "swap"), swap_spec, SwapperOptions(swap_spec.name))
        enhancer = Enhancer(GuardedSession(pool, enh_path, slots, "enh"), enh_spec,
                            EnhancerOptions(enh_spec.name)) if enhance else None
        occluder = Occluder(GuardedSession(pool, xseg, slots, "xseg"), CATALOG["xseg_1"]) if occlusion else None
        masks = MaskOptions(("box", "occlusion") if occlusion else ("box",))
        return swapper, enhancer, masks, occluder

    frame, all_faces = _scene()
    print(f"720p, {args.frames} frames, provider {args.provider}; ms per face (wall / process CPU)")
    print(f"{'chain':<18}{'faces':>6}{'cpu path':>20}{'device path':>20}{'wall ratio':>12}")
    for enhance, occlusion in ((False, False), (True, False), (True, True)):
        swapper, enhancer, masks, occluder = adapters(host_pool, enhance, occlusion)
        cpu_chain = ProcessorChain(swapper, enhancer, masks, occluder)
        swapper, enhancer, masks, occluder = adapters(device_pool, enhance, occlusion)
        device_chain = DeviceChain(swapper, enhancer, masks, device_pool.graph, occluder)
        for count in args.faces:
            faces = all_faces[:count]
            host = _time(cpu_chain, frame, faces, source, args.frames)
            dev = _time(device_chain, frame, faces, source, args.frames)
            name = ("swap+enhance" if enhance else "swap") + ("+occl" if occlusion else "")
            print(f"{name:<18}{count:>6}{host[0] * 1e3 / count:>10.1f} /{host[1] * 1e3 / count:>7.1f}"
                  f"{dev[0] * 1e3 / count:>12.1f} /{dev[1] * 1e3 / count:>7.1f}{dev[0] / host[0]:>12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
