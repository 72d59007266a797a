"""The offline swap's constants tried on clips `benchmarks/quality.py --keep` kept: per variant, the judge's distance
to the source, the share it accepts and the share it still finds as a face, turned faces and the others apart.

    python benchmarks/quality.py --split turned --keep /tmp/keep      # once: the split's clips and source photos
    python benchmarks/swap_variants.py /tmp/keep/turned r_static_cut.mp4 m7,luis \\
        --variant main --variant stretch4:MAX_STRETCH=4 --variant soft:SHADE_SCALE=0.12,FEATHER=0.1

Every 8th frame (as quality.py judges), the faces ffb's offline engine detects on that frame alone are swapped by
`offline.classic.swap_face` with each variant's constants (module constants of `offline/classic.py`), the rest as
in main; each variant prepares the source under its own constants (those read when a source is prepared, such as
FRONTAL_FROM or MIRROR_GAIN, count too). No tracker: its shares are below the benchmark's, so they compare variants on the same fits only; a
variant that wins here is then run through `quality.py` on the tuning splits. `--sheet` writes the turned faces'
crops, a row a face, a column a variant, to look at: a number that improves by painting the source's ear on a
cheek is no improvement. Needs the judge (`pip install -e '.[quality]'`).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from facefusion_batch.bench import quality as q  # noqa: E402
from facefusion_batch.offline import classic  # noqa: E402

TURNED = 0.5  # |classic.turn| from which a face counts as turned (about 30 degrees)


def parse_variant(text: str, module: ModuleType = classic) -> tuple[str, dict[str, float]]:
    """``name`` or ``name:CONSTANT=value,...`` -> (name, {constant: value}); a constant the module lacks is an error."""
    name, _, assignments = text.partition(":")
    values = {}
    for assignment in filter(None, assignments.split(",")):
        constant, equals, value = assignment.partition("=")
        if not equals or not isinstance(getattr(module, constant, None), (int, float)):
            raise ValueError(f"{assignment!r}: give CONSTANT=number, CONSTANT one of {module.__name__}'s numbers")
        values[constant] = float(value)
    if not name:
        raise ValueError(f"{text!r}: the variant needs a name before its constants")
    return name, values


@contextlib.contextmanager
def overridden(module: ModuleType, values: dict[str, float]) -> Iterator[None]:
    """``module``'s constants set to ``values`` inside the block, restored after it whatever happens."""
    saved = {constant: getattr(module, constant) for constant in values}
    try:
        for constant, value in values.items():
            setattr(module, constant, value)
        yield
    finally:
        for constant, value in saved.items():
            setattr(module, constant, value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kept", type=Path, help="a split's folder that quality.py --keep wrote (KEEP/SPLIT)")
    parser.add_argument("clip", help="the clip's (or image's) file name in it, e.g. r_static_cut.mp4")
    parser.add_argument("sources", help="the source names to swap in, comma-separated (source-NAME.png in the folder)")
    parser.add_argument("--variant", action="append", required=True,
                        help="NAME or NAME:CONSTANT=value,... (offline/classic.py's constants); repeat for each")
    parser.add_argument("--frames", help="the frames to judge, comma-separated (default: every 8th)")
    parser.add_argument("--sheet", type=Path, help="write the turned faces' crops here (PNG)")
    args = parser.parse_args()
    try:
        variants = dict(parse_variant(text) for text in args.variant)
    except ValueError as error:
        sys.exit(f"--variant {error}")
    from facefusion_batch.engines import build_engine
    from facefusion_batch.settings import load_settings

    clip = args.kept / args.clip
    if not clip.is_file():
        sys.exit(f"{clip}: no such clip; run quality.py --split SPLIT --keep KEEP first")
    video = quality.read_frames(clip) if clip.suffix == ".mp4" else [cv2.imread(str(clip))]
    frames = ([int(f) for f in args.frames.split(",")] if args.frames
              else list(range(0, len(video), quality.JUDGE_EVERY)))
    settings = load_settings(None, os.environ, {"engine": "offline"}).settings
    with contextlib.ExitStack() as stack:
        engine = build_engine(settings)  # finds the faces
        stack.callback(engine.close)
        # An engine per variant: a source's textures are prepared, and cached, under the constants of the variant that
        # first asks for them (what it derives from them included: `SourceTexture.skin`, the frontal turn, its mirror).
        engines = {name: build_engine(settings) for name in variants}
        for made in engines.values():
            stack.callback(made.close)
        verdicts, rows = compare(args, video, frames, variants, engine, engines)
    for name, rows_of in verdicts.items():
        table = np.array(rows_of, np.float64).reshape(-1, 3)
        parts = []
        for label, chosen in (("turned", table[:, 2] == 1), ("others", table[:, 2] == 0)):
            part = table[chosen]
            if len(part):
                parts.append(f"{label} {len(part)}: d {part[:, 0].mean():.3f}, accepted "
                             f"{np.mean(part[:, 0] < q.ACCEPT):.1%}, found {part[:, 1].mean():.1%}")
        print(f"{name:12s} " + " | ".join(parts))
    if args.sheet and rows:
        cv2.imwrite(str(args.sheet), np.vstack(rows))


def compare(args, video: list[np.ndarray], frames: list[int], variants: dict[str, dict[str, float]], engine,
            engines: dict) -> tuple[dict[str, list[tuple[float, bool, bool]]], list[np.ndarray]]:
    """Per variant, (judge distance, still found, turned) of every face swapped; and the turned faces' sheet rows."""
    judge = quality.Judge()
    verdicts: dict[str, list[tuple[float, bool, bool]]] = {name: [] for name in variants}
    rows = []
    for source in args.sources.split(","):
        photo = args.kept / f"source-{source}.png"
        image = cv2.imread(str(photo))
        if image is None:
            sys.exit(f"{photo}: no such source photo in the kept folder")
        descriptor = judge.describe_source(image)
        if descriptor is None:
            sys.exit(f"{photo}: the judge finds no face in it")
        prepared = {name: engines[name].prepare_source(photo) for name in variants}
        for t in (t for t in frames if t < len(video)):
            frame = video[t]
            for face in engine.detect(frame):
                seen, box = judge.found_near(frame, face.box)
                turn = classic.turn(face.landmarks)
                if not seen or abs(turn) >= classic.PROFILE:  # the judge's own miss, or a profile ffb leaves
                    continue
                row = [quality.face_crop(frame, face.box, 160)]
                for name, values in variants.items():
                    with overridden(classic, values):
                        texture = engines[name].texture_for(prepared[name], turn)
                        out = classic.swap_face(frame, face.landmarks, texture)
                    still, out_box = judge.found_near(out, box)
                    distance = float(np.linalg.norm(judge.describe(out, out_box) - descriptor))
                    verdicts[name].append((distance, still, abs(turn) >= TURNED))
                    row.append(quality._label(quality.face_crop(out, face.box, 160),
                                              f"{name} {distance:.2f}{'' if still else ' lost'}"))
                if abs(turn) >= TURNED:
                    rows.append(np.hstack(row))
    return verdicts, rows


if __name__ == "__main__":
    main()
