"""Make docs/before_after.png for the README: example frames before and after the offline engine's swap.

Run from the repository root:  python tools/make_readme_still.py
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import cv2
import numpy as np

from facefusion_batch.workflow.processor import prepare
from facefusion_batch.settings import load_settings
from facefusion_batch.video.ffmpeg import SWS_FLAGS, ffmpeg_binary

ROOT = Path(__file__).resolve().parents[1]
CLIPS = ["astronaut_pan.mp4", "group.mp4"]
FRAME = 40
WIDTH = 480


def frame_of(clip: Path, index: int) -> np.ndarray:
    raw = subprocess.run([ffmpeg_binary(), "-v", "error", "-i", str(clip), "-vf", f"select=eq(n\\,{index})",
                          *SWS_FLAGS, "-frames:v", "1", "-f", "image2pipe", "-c:v", "png", "-"],
                         capture_output=True, check=True).stdout
    return cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_COLOR)


def main() -> int:
    settings = load_settings(None, {}, {"engine": "offline", "face_selector_mode": "many",
                                        "output_path": Path("/tmp/ffb-still"), "cache_path": Path("/tmp/ffb-still")}
                             ).settings
    processor = prepare(settings, ROOT / "examples" / "source.jpg", lambda text: None)
    rows = []
    for name in CLIPS:
        before = frame_of(ROOT / "examples" / "clips" / name, FRAME)
        after, _ = processor.frame(before.copy())
        height = round(before.shape[0] * WIDTH / before.shape[1])
        rows.append(np.hstack([cv2.resize(img, (WIDTH, height), interpolation=cv2.INTER_AREA)
                               for img in (before, after)]))
    out = ROOT / "docs" / "before_after.png"
    out.parent.mkdir(exist_ok=True)
    cv2.imwrite(str(out), np.vstack(rows))
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
