"""The invisible watermark on real ffb outputs: imperceptibility, robustness, false positives.

    python benchmarks/watermark.py [--work DIR] [--clips 20] [--seconds 4] [--insightface-wheel WHEEL]
                                   [--strength RMS]

Makes `--clips` 720p clips of real faces (NASA's astronaut, Grace Hopper, insightface 2.1's t1.jpg group in
thirds and Tom_Hanks, each also mirrored; `benchmarks`' talking-head composition: the photo on a textured
backdrop, sub-pixel drift, sensor noise), swaps a face into them with `ffb run --watermark` (offline engine,
content gate on) and again with `--no-watermark`, then measures:

- imperceptibility: PSNR of each output's frames with the mark vs the same frames without it (the mark as
  embedded, before encoding) and PSNR of the two encoded outputs; x8 difference images of flat skin and of
  the flattest area are written as a contact sheet (unmarked | marked | 128 + 8 x difference) to look at;
- robustness: the payload `ffb verify` reads from copies of each output: H.264 CRF 28 re-encode, scaled to
  50 %, a centred 10 % crop (90 % of width and height), one frame exported as JPEG quality 75, a 3 s excerpt;
- false positives: the unmarked clips read as videos, and 4 frames of each as JPEG pictures;
- for comparison, `invisible-watermark`'s DWT-DCT (imwatermark) on single frames with the same changes, when
  it can be imported (it is not a dependency of ffb: `pip download --no-deps invisible-watermark` plus
  PyWavelets on PYTHONPATH).

The insightface wheel is read for its images only (`pip download --no-deps insightface==2.1`, cached);
nothing is committed. Results: JSON on stdout and a table on stderr. `--strength` measures the mark at another
strength than ffb's (`watermark.STRENGTH`, set in the ffb runs through a sitecustomize on PYTHONPATH): what a
change of strength would give, without changing ffb.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import cv2
import numpy as np

from facefusion_batch.bench.clips import make_clip
from facefusion_batch.provenance import verify, watermark as wm
from facefusion_batch.video.ffmpeg import ffmpeg_binary

SIZE = (1280, 720)
TRANSFORMS = ("crf28", "scale50", "crop10", "jpeg75_frame", "excerpt3s")


def face_photos(cache: Path, wheel: Path | None) -> list[tuple[str, np.ndarray]]:
    import matplotlib
    from skimage import data

    hopper = cv2.imread(str(Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"))
    photos = [("astronaut", np.ascontiguousarray(data.astronaut()[:, :, ::-1])), ("hopper", hopper)]
    if wheel is None:
        found = sorted(cache.glob("insightface-2.1-*.whl"))
        if not found:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "insightface==2.1",
                            "-d", str(cache)], check=True)
            found = sorted(cache.glob("insightface-2.1-*.whl"))
        wheel = found[0]
    with zipfile.ZipFile(wheel) as archive:
        def read(name: str) -> np.ndarray:
            return cv2.imdecode(np.frombuffer(archive.read(f"insightface/data/images/{name}"), np.uint8), 1)

        t1, hanks = read("t1.jpg"), read("Tom_Hanks_54745.png")
    third = t1.shape[1] // 3
    photos += [("t1", t1), ("hanks", cv2.resize(hanks, (448, 448), interpolation=cv2.INTER_CUBIC))]
    photos += [(f"t1_part{i}", t1[:, i * third:(i + 1) * third]) for i in range(3)]
    photos += [("t1_top", t1[: t1.shape[0] * 3 // 5]), ("astronaut_face", photos[0][1][0:300, 100:400]),
               ("hopper_face", hopper[0:320, 40:360])]
    mirrored = [(f"{name}_mirror", np.ascontiguousarray(photo[:, ::-1])) for name, photo in photos]
    return photos + mirrored


def ffb(args: list[str], env: dict[str, str]) -> dict:
    result = subprocess.run([sys.executable, "-m", "facefusion_batch", *args], env=env, capture_output=True,
                            text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"ffb {' '.join(args[:1])} failed ({result.returncode}): {result.stderr.strip()[-500:]}")
    return json.loads(result.stdout)


def decode(path: Path, count: int = 10) -> list[np.ndarray]:
    step = max(1, int(cv2.VideoCapture(str(path)).get(cv2.CAP_PROP_FRAME_COUNT)) // count)
    from facefusion_batch.video.decoder import sampled_frames

    return list(sampled_frames(path, step, *SIZE))[:count]


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255 ** 2 / mse)


def transformed(clip: Path, how: str, out: Path) -> Path:
    """A copy of `clip` changed as platforms and people do; every copy has no metadata and no manifest."""
    ff = [ffmpeg_binary(), "-v", "error", "-y"]
    if how == "jpeg75_frame":
        png = out.with_suffix(".png")
        subprocess.run([*ff, "-ss", "1.5", "-i", str(clip), "-frames:v", "1", str(png)], check=True)
        cv2.imwrite(str(out.with_suffix(".jpg")), cv2.imread(str(png)), [cv2.IMWRITE_JPEG_QUALITY, 75])
        png.unlink()
        return out.with_suffix(".jpg")
    args = {"crf28": ["-crf", "28"], "scale50": ["-vf", "scale=iw/2:ih/2"],
            "crop10": ["-vf", "crop=iw*0.9:ih*0.9"], "excerpt3s": ["-ss", "0.6", "-t", "3"]}[how]
    pre = args[:2] if how == "excerpt3s" else []
    post = args[2:] if how == "excerpt3s" else args
    subprocess.run([*ff, *pre, "-i", str(clip), *post, "-map_metadata", "-1", "-c:v", "libx264", "-an",
                    str(out)], check=True)
    return out


def contact_sheet(unmarked: np.ndarray, marked: np.ndarray, path: Path) -> dict:
    """Crop the flattest 96x96 patch of skin-toned pixels (the face's cheek or forehead) and the flattest
    patch anywhere (a wall, a blurred backdrop) and write, a row each, unmarked | marked |
    128 + 8 x (marked - unmarked), each enlarged 3x."""
    hsv = cv2.cvtColor(unmarked, cv2.COLOR_BGR2HSV)
    skin = (hsv[..., 0] < 20) & (hsv[..., 1] > 40) & (hsv[..., 1] < 140) & (hsv[..., 2] > 100)
    grey = cv2.cvtColor(unmarked, cv2.COLOR_BGR2GRAY).astype(np.float32)
    detail = cv2.blur(np.abs(grey - cv2.blur(grey, (5, 5))), (96, 96))
    rows, found = [], {}
    for name, allowed in (("skin", cv2.blur(skin.astype(np.float32), (96, 96)) > 0.8), ("flat", None)):
        score = detail if allowed is None else np.where(allowed, detail, np.inf)
        score = score.copy()
        score[:48], score[-48:], score[:, :48], score[:, -48:] = np.inf, np.inf, np.inf, np.inf
        y, x = np.unravel_index(int(np.argmin(score)), score.shape)
        y0, x0 = y - 48, x - 48
        a, b = unmarked[y0:y0 + 96, x0:x0 + 96], marked[y0:y0 + 96, x0:x0 + 96]
        diff = np.clip(128 + 8 * (b.astype(np.int16) - a), 0, 255).astype(np.uint8)
        rows.append(np.hstack([a, np.full((96, 4, 3), 255, np.uint8), b, np.full((96, 4, 3), 255, np.uint8), diff]))
        found[name] = {"patch": [int(x0), int(y0)], "detail": float(score[y, x]),
                       "mark_rms": float(np.sqrt(np.mean((b.astype(np.float64) - a) ** 2)))}
    sheet = np.vstack([rows[0], np.full((4, rows[0].shape[1], 3), 255, np.uint8), rows[1]])
    cv2.imwrite(str(path), cv2.resize(sheet, None, fx=3, fy=3, interpolation=cv2.INTER_NEAREST))
    return {**found, "file": str(path)}


def dwt_dct_baseline(frames: list[np.ndarray]) -> dict | None:
    """invisible-watermark's DWT-DCT with a 32-bit payload on single frames, same changes (no video ones).
    Its package imports torch for RivaGAN even when DWT-DCT is used: a stub stands in (DWT-DCT never uses it)."""
    import types

    sys.modules.setdefault("torch", types.ModuleType("torch"))
    try:
        from imwatermark import WatermarkDecoder, WatermarkEncoder
    except ImportError:
        return None
    payload = bytes.fromhex("5eed1234")
    found = {name: 0 for name in ("none", "jpeg75", "scale50", "crop10")}
    timing, quality = [], []
    for frame in frames:
        encoder = WatermarkEncoder()
        encoder.set_watermark("bytes", payload)
        started = time.perf_counter()
        marked = encoder.encode(frame, "dwtDct")
        timing.append(time.perf_counter() - started)
        quality.append(psnr(frame, marked))
        h, w = marked.shape[:2]
        ok, data = cv2.imencode(".jpg", marked, [cv2.IMWRITE_JPEG_QUALITY, 75])
        copies = {"none": marked, "jpeg75": cv2.imdecode(data, 1),
                  "scale50": cv2.resize(marked, (w // 2, h // 2), interpolation=cv2.INTER_AREA),
                  "crop10": marked[h // 20:h - h // 20, w // 20:w - w // 20]}
        for name, copy in copies.items():
            decoded = WatermarkDecoder("bytes", 32).decode(copy, "dwtDct")
            found[name] += decoded == payload
    return {"frames": len(frames), "found": {k: f"{v}/{len(frames)}" for k, v in found.items()},
            "embed_ms": 1000 * float(np.median(timing)), "psnr_min": min(quality)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "ffb" / "watermark-bench")
    parser.add_argument("--clips", type=int, default=22)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--insightface-wheel", type=Path)
    parser.add_argument("--strength", type=float, help="the mark's RMS in grey levels (default: ffb's)")
    options = parser.parse_args()
    work = options.work
    work.mkdir(parents=True, exist_ok=True)
    extra_path = []
    if options.strength is not None:
        wm.STRENGTH = options.strength
        site = work / "strength"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text("from facefusion_batch.provenance import watermark\n"
                                               f"watermark.STRENGTH = {options.strength!r}\n")
        extra_path = [str(site)]
    targets, outputs = work / "targets", work / "marked"
    targets.mkdir(parents=True, exist_ok=True)
    photos = face_photos(work, options.insightface_wheel)[:options.clips]
    frames = round(options.seconds * 25)
    for name, photo in photos:
        path = targets / f"{name}.mp4"
        if not path.exists():
            make_clip(path, SIZE, frames, photo)
    source = work / "source.jpg"
    cv2.imwrite(str(source), face_photos(work, options.insightface_wheel)[1][1])  # Grace Hopper
    env = {**os.environ, "FFB_CACHE_PATH": str(work / "cache"), "FFB_TEMP_PATH": str(work / "tmp"),
           "FFB_ENGINE": "offline",
           "PYTHONPATH": os.pathsep.join([*extra_path, *filter(None, [os.environ.get("PYTHONPATH")])])}
    marked = ffb(["run", "--json", "-q", "--force", "-s", str(source), "-t", str(targets), "-o", str(outputs),
                  "--watermark"], env)
    plain = ffb(["run", "--json", "-q", "--force", "-s", str(source), "-t", str(targets), "-o", str(work / "plain"),
                 "--no-watermark"], env)
    done = {Path(o["target"]).name: o for o in marked["outcomes"] if o["status"] == "done"}
    plain_done = {Path(o["target"]).name for o in plain["outcomes"] if o["status"] == "done"}
    names = sorted(n for n in done if n in plain_done)
    report: dict = {"outputs": len(names), "strength": wm.STRENGTH,
                    "not_swapped": {Path(o["target"]).name: o["status"] for o in marked["outcomes"]
                                    if Path(o["target"]).name not in names},
                    "gate": sorted({o["content_gate"] for o in marked["outcomes"]})}

    embedded, encoded, embed_ms = [], [], []
    for index, name in enumerate(names):
        mark = wm.Watermarker(int(done[name]["watermark"], 16))
        unmarked_frames = decode(work / "plain" / name)
        for frame in unmarked_frames:
            frame_copy = frame.copy()
            started, cpu = time.perf_counter(), time.process_time()
            again = mark.mark(frame_copy)
            embed_ms.append((1000 * (time.perf_counter() - started), 1000 * (time.process_time() - cpu)))
            embedded.append(psnr(frame, again))
        encoded += [psnr(a, b) for a, b in zip(decode(outputs / name), unmarked_frames)]
        if index == 0:
            report["contact_sheet"] = contact_sheet(unmarked_frames[0], mark.mark(unmarked_frames[0].copy()),
                                                    work / "difference_x8.png")
    report["psnr_embedded"] = {"min": min(embedded), "median": float(np.median(embedded))}
    report["psnr_encoded_outputs"] = {"min": min(encoded), "median": float(np.median(encoded))}
    report["embed_ms_720p"] = float(np.median([wall for wall, _ in embed_ms[1:]]))  # wall: the machine's load too
    report["embed_cpu_ms_720p"] = float(np.median([cpu for _, cpu in embed_ms[1:]]))

    robust: dict[str, list] = {how: [] for how in TRANSFORMS}
    copies = work / "copies"
    copies.mkdir(exist_ok=True)
    read_s = []
    for name in names:
        for how in TRANSFORMS:
            copy = transformed(outputs / name, how, copies / f"{Path(name).stem}_{how}.mp4")
            started = time.perf_counter()
            finding = verify.inspect(copy)
            read_s.append(time.perf_counter() - started)
            robust[how].append(finding.watermark_bits if finding.watermark == done[name]["watermark"] else None)
    report["robustness"] = {how: f"{sum(b is not None for b in hits)}/{len(hits)}" for how, hits in robust.items()}
    report["bits_z_min"] = {how: min((b for b in hits if b is not None), default=None) for how, hits in robust.items()}
    report["read_s_median"] = float(np.median(read_s))

    false, checked = 0, 0
    for name in sorted(p.name for p in targets.glob("*.mp4")):
        checked += 1
        false += bool(verify.inspect(targets / name).watermark)
        for frame in decode(targets / name, 4):
            ok, data = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 90])
            checked += 1
            false += wm.read_frames([cv2.imdecode(data, 1)]).found
    report["false_positives"] = f"{false}/{checked}"
    baseline = dwt_dct_baseline([decode(work / "plain" / n, 1)[0] for n in names[:8]])  # ~2 s a frame
    if baseline is not None:
        report["dwt_dct_baseline"] = baseline
    print(json.dumps(report, indent=1))
    print(f"outputs {report['outputs']}; PSNR embedded min {report['psnr_embedded']['min']:.1f} dB, "
          f"encoded min {report['psnr_encoded_outputs']['min']:.1f} dB; robustness "
          + ", ".join(f"{k} {v}" for k, v in report["robustness"].items())
          + f"; false positives {report['false_positives']}", file=sys.stderr)


if __name__ == "__main__":
    main()
