"""Run `ffb run --engine offline` over the hostile corpus (tests/hostile_media.py) and report each case.

    python tools/hostile_report.py [--keep]

Prints a Markdown table: each target, the outcome expected, what ffb reported, and what the files show:
frames decoded from input and output, audio kept, display size kept, duration, and any partial or hidden
file left in the output or temp directory. A re-run (as cron would start it) must skip every target: the
failures are journaled, nothing is tried again until it changes, exit 0. A last run checks that a two-face
source is reported. `ffb verify` then checks every finished output's metadata mark (and that none fails
or changed), and judges files whose bytes claim a C2PA manifest that does not parse (damaged, exit 1)
against files that claim none. An output disk that fills mid-run (a 10 MB tmpfs, where it can be mounted)
and a file renamed over a target while it is processed (injected into the ffb process) are checked last.
Exits 1 when any case differs from its expectation or a run hangs. Needs no models and no network.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable

import numpy as np
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from hostile_media import (RENAME_OVER, Expected, build_corpus, build_manifest_corpus,  # noqa: E402
                           build_multi_face_source, face_clip, noise_face_png)

from facefusion_batch.errors import MediaError  # noqa: E402
from facefusion_batch.video.ffmpeg import SDR_BT709, VIDEO_STREAM, ffmpeg_binary, local  # noqa: E402
from facefusion_batch.video.probe import VideoInfo, probe  # noqa: E402

SOURCE = ROOT / "examples" / "source.jpg"
MAX_DRIFT = 0.05  # seconds a frame may move in time before audio sync visibly suffers


@dataclass
class Row:
    name: str
    expected: Expected
    status: str = "(missing)"
    reason: str = ""
    checks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def ffb_command() -> str:
    local = Path(sys.executable).parent / "ffb"
    return str(local) if local.exists() else "ffb"


RUN_LIMIT_S = 900  # a run that takes longer is reported as hung (a FIFO read for ever, ...)


def run_ffb(source: Path, target: Path, out: Path, temp: Path, quiet: bool = True,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    args = [ffb_command(), "run", "--engine", "offline", "--many-faces", "--json", "-s", str(source),
            "-t", str(target), "-o", str(out), "--temp-path", str(temp)] + (["-q"] if quiet else [])
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=RUN_LIMIT_S, env=env)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(args, -1, "", f"hung: no end after {RUN_LIMIT_S} s\n{exc.stderr or ''}")


def rerun_problems(proc: subprocess.CompletedProcess) -> list[str]:
    """What is wrong with a re-run over the same corpus and output: anything but every target skipped."""
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return [f"no JSON summary (exit {proc.returncode}): {proc.stderr[-300:]}"]
    again = [f"{Path(o['target']).name} {o['status']}" for o in result["outcomes"] if o["status"] != "skipped"]
    return ([f"exit {proc.returncode}, expected 0"] if proc.returncode else []) + again


def decoded_times(path: Path) -> list[float] | None:
    """Display time in seconds of every frame the decoder delivers (not probe's packet count), or None."""
    proc = subprocess.run([ffmpeg_binary(), "-v", "error", "-nostdin", "-i", local(path), "-map", VIDEO_STREAM,
                           "-fps_mode", "passthrough", "-f", "framecrc", "-"], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    timebase = Fraction(1, 1)
    times = []
    for line in proc.stdout.splitlines():
        if line.startswith("#tb 0:"):
            timebase = Fraction(line.split(":")[1].strip())
        elif line and not line.startswith("#"):
            times.append(float(int(line.split(",")[2]) * timebase))
    return sorted(times)


def safe_probe(path: Path) -> VideoInfo | None:
    try:
        return probe(path)
    except MediaError:
        return None


def compare_video(source: Path, output: Path) -> tuple[list[str], list[str]]:
    """(facts, problems) from decoding the input and the output of a finished video."""
    facts: list[str] = []
    problems: list[str] = []
    times_in, times_out = decoded_times(source), decoded_times(output)
    frames_in, frames_out = (None if t is None else len(t) for t in (times_in, times_out))
    facts.append(f"frames {frames_in}->{frames_out}")
    if frames_in != frames_out:
        problems.append(f"frame count {frames_in}->{frames_out}")
    elif times_in and times_out:
        # Absolute times: the audio is copied with its own, so a constant offset is a sync error too.
        drift = max(abs(a - b) for a, b in zip(times_in, times_out))
        facts.append(f"max frame time drift {drift * 1000:.0f} ms")
        if drift > MAX_DRIFT:
            problems.append(f"frames shown up to {drift * 1000:.0f} ms off their original time")
    before, after = safe_probe(source), safe_probe(output)
    if before is None or after is None:
        problems.append("output not probeable" if after is None else "input not probeable")
        return facts, problems
    facts.append(f"{before.width}x{before.height}->{after.width}x{after.height}")
    if (before.width, before.height) != (after.width, after.height):
        problems.append("display size changed")
    facts.append(f"audio {before.audio_codec}->{after.audio_codec}")
    if before.audio_codec and not after.audio_codec:
        problems.append("audio lost")
    facts.append(f"dur {before.duration:.2f}->{after.duration:.2f}s")
    if abs(before.duration - after.duration) > max(0.1, before.duration * 0.05):
        problems.append("duration changed")
    if before.variable_frame_rate and not after.variable_frame_rate:
        facts.append("VFR->CFR")
    problems += picture_problems(before, after, facts)
    return facts, problems


def picture_problems(before: VideoInfo, after: VideoInfo, facts: list[str]) -> list[str]:
    """What the output shows differently from the input besides its pixels: aspect, interlacing, colour
    tags, subtitles."""
    problems = []
    if before.sar != 1 or after.sar != 1:
        facts.append(f"SAR {before.sar}->{after.sar}")
    shown_before, shown_after = before.picture.sar, after.picture.sar  # of the frames as shown (rotated)
    if shown_before * before.width / before.height != shown_after * after.width / after.height:
        problems.append(f"display aspect changed (SAR {shown_before} -> {shown_after})")
    if before.field_order != "progressive" or after.field_order != "progressive":
        facts.append(f"fields {before.field_order}->{after.field_order}")
    if before.field_order != after.field_order:
        problems.append(f"field order {before.field_order} -> {after.field_order}")
    problems += colour_problems(before, after, facts)
    if before.timecode or after.timecode:
        facts.append(f"timecode {before.timecode}->{after.timecode}")
    if before.timecode != after.timecode:
        problems.append(f"timecode {before.timecode} -> {after.timecode}")
    if len(before.audio_codecs) > 1 or len(after.audio_codecs) > 1:
        facts.append(f"audio tracks {','.join(before.audio_codecs)}->{','.join(after.audio_codecs)}")
    if len(after.audio_codecs) < len(before.audio_codecs):
        problems.append("audio tracks lost")
    if before.covers:
        facts.append(f"covers {len(before.covers)}->{len(after.covers)}")
        if len(after.covers) < len(before.covers) and Path(after.path).suffix.lower() in (".mp4", ".m4v"):
            problems.append("cover picture lost")
    if before.attachments:
        facts.append(f"attachments {before.attachments}->{after.attachments}")
        if after.attachments < before.attachments:
            problems.append("attachments lost")
    if before.subtitle_codecs:
        facts.append(f"subtitles {','.join(before.subtitle_codecs)}->{','.join(after.subtitle_codecs) or 'none'}")
        if len(after.subtitle_codecs) < len(before.subtitle_codecs):
            problems.append("subtitles lost")
    return problems


def colour_problems(before: VideoInfo, after: VideoInfo, facts: list[str], tone_mapped: bool = False) -> list[str]:
    """Colour kept: primaries, transfer, matrix, range and HDR10 metadata as they were, and an HDR output
    still 10-bit; or, where the summary says HDR was tone-mapped, SDR BT.709 with every tag."""
    if before.colour.hdr:
        facts.append(f"{before.colour.transfer} {before.pixel_format}->{after.colour.transfer} {after.pixel_format}")
    if tone_mapped:
        return [] if after.colour == SDR_BT709 else [f"tone-mapped output tagged {after.colour}, not SDR BT.709"]
    problems = []
    # An RGB source's 'gbr' matrix can't be carried: the output is YUV, untagged unless the source was.
    source_colour = dataclasses.replace(before.colour, matrix=None) if before.colour.matrix == "gbr" else before.colour
    if source_colour != after.colour:
        problems.append(f"colour tags {source_colour} -> {after.colour}")
    if before.colour.hdr and "10" not in after.pixel_format:
        problems.append(f"HDR output is {after.pixel_format}, not 10-bit")
    return problems


IMAGES = (".png", ".jpg", ".jpeg", ".webp", ".gif")


def image_facts(path: Path) -> tuple[int, bool, tuple[int, int], tuple[int, ...]]:
    """(frames, whether any pixel of any frame is see-through, size, each frame's duration in ms (a frame
    without one: 0)) of an image file."""
    from PIL import Image

    with Image.open(path) as image:
        frames = getattr(image, "n_frames", 1)
        alpha = False
        durations = []
        for index in range(frames):
            image.seek(index)
            alpha = alpha or int(np.asarray(image.convert("RGBA"))[:, :, 3].min()) < 255
            durations.append(round(image.info.get("duration") or 0))
        return frames, alpha, image.size, tuple(durations) if frames > 1 else ()


def compare_image(source: Path, output: Path) -> tuple[list[str], list[str]]:
    """(facts, problems): an image keeps its frame count, its transparency and its size."""
    try:
        before, after = image_facts(source), image_facts(output)
    except OSError as exc:
        return [], [f"image not readable ({exc})"]
    facts = [f"frames {before[0]}->{after[0]}", f"alpha {before[1]}->{after[1]}"]
    problems = []
    if before[0] != after[0]:
        problems.append(f"frame count {before[0]}->{after[0]}")
    if before[1] and not after[1]:
        problems.append("transparency lost")
    if before[2] != after[2]:
        problems.append(f"size {before[2]}->{after[2]}")
    if before[3] != after[3]:
        problems.append(f"frame durations {before[3]} ms -> {after[3]} ms")
    return facts, problems


def verify_documents(stdout: str) -> list[dict]:
    """The findings `ffb verify --json` printed: one JSON array, or one document per line."""
    text = stdout.strip()
    if text.startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def run_verify(paths: list[Path]) -> tuple[int, list[dict]]:
    proc = subprocess.run([ffb_command(), "verify", "--json", *map(str, paths)], capture_output=True, text=True,
                          timeout=RUN_LIMIT_S)
    try:
        return proc.returncode, verify_documents(proc.stdout)
    except json.JSONDecodeError:
        return proc.returncode, [{"file": "?", "problems": [f"no JSON from ffb verify: {proc.stderr[-300:]}"]}]


Verify = Callable[[list[Path]], tuple[int, list[dict]]]  # run_verify, or what answers as it does


def verify_problems(rows: list[Row], out: Path, verify: Verify = run_verify) -> list[str]:
    """`ffb verify` (or `verify`) over the outputs of the targets reported done: each shows its metadata mark
    (every format: AVI keeps only the comment, GIF its comment extension), none claims a manifest that fails,
    and each is unchanged since its run wrote it."""
    outputs = [out / row.name for row in rows if row.status == "done" and (out / row.name).is_file()]
    if not outputs:
        return []
    code, findings = verify(outputs)
    problems = [f"ffb verify exit {code}"] if code else []
    for finding in findings:
        name = Path(finding["file"]).name
        if not finding.get("metadata_mark"):
            problems.append(f"{name}: no metadata mark")
        if finding.get("validation") == "invalid":
            problems.append(f"{name}: {'; '.join(finding.get('problems', []))}")
        if (finding.get("journal") or {}).get("output_unchanged") is False:
            problems.append(f"{name}: changed since it was written?")
    return problems


def manifest_problems(directory: Path, verify: Verify = run_verify) -> list[str]:
    """`ffb verify` (or `verify`) on files whose bytes claim a C2PA manifest that does not parse (damaged:
    invalid, exit 1) and on files that claim none (none, exit 0), one at a time."""
    problems = []
    for name, expected in build_manifest_corpus(directory).items():
        code, findings = verify([directory / name])
        finding = findings[0] if findings else {}
        got = "damaged" if finding.get("validation") == "invalid" else finding.get("c2pa", "?")
        if got != expected or code != (1 if expected == "damaged" else 0):
            problems.append(f"{name}: {got} (exit {code}), expected {expected}")
    return problems


def leftovers(out: Path, temp: Path) -> list[str]:
    """Hidden or partial files under the output dir, and anything at all under the temp dir."""
    found = [f"out:{p.relative_to(out)}" for p in out.rglob("*")
             if p.is_file() and (p.name.startswith(".") or ".ffb-" in p.name or ".tmp" in p.name)]
    if temp.exists():
        found += [f"temp:{p.relative_to(temp)}" for p in temp.rglob("*")]
    return found


def judge(row: Row, corpus: Path, out: Path) -> None:
    expected = row.expected
    if row.status != expected.status:
        row.problems.append(f"status {row.status}, expected {expected.status}")
    if expected.reason_contains and expected.reason_contains.lower() not in row.reason.lower():
        row.problems.append(f"reason lacks '{expected.reason_contains}'")
    output = out / row.name
    if row.status == "failed" and output.exists():
        row.problems.append("output written for a failed target")
    if row.status == "skipped" and (output.exists() or output.is_symlink()):
        row.problems.append("output written under another name of a file that is done under its own")
    if row.status in ("done", "no_face") and not output.exists():
        row.problems.append("no output file")
    elif row.status == "done" and Path(row.name).suffix.lower() in IMAGES:
        facts, problems = compare_image(corpus / row.name, output)
        row.checks += facts
        row.problems += problems
    elif row.status == "done":
        facts, problems = compare_video(corpus / row.name, output)
        if "variable frame rate" in (expected.reason_contains or ""):  # moved frames are expected and reported
            problems = [p for p in problems if "off their original time" not in p]
        if "cover picture not kept" in row.reason:  # a loss the summary reports is no silent degradation
            problems = [p for p in problems if p != "cover picture lost"]
        if "tone-mapped to SDR" in row.reason:  # HDR made SDR on purpose, said in the summary
            problems = [p for p in problems if not p.startswith(("colour tags", "HDR output is"))]
            before, after = safe_probe(corpus / row.name), safe_probe(output)
            if before is not None and after is not None:
                problems += colour_problems(before, after, [], tone_mapped=True)
        row.checks += facts
        row.problems += problems


def rows_from(result: dict, expected: dict[str, Expected], corpus: Path) -> tuple[list[Row], list[str]]:
    rows = {name: Row(name, outcome) for name, outcome in expected.items()}
    strays: list[str] = []
    for outcome in result.get("outcomes", []):
        target = Path(outcome["target"])
        name = str(target.relative_to(corpus)) if target.is_relative_to(corpus) else str(target)
        if name in rows:
            rows[name].status, rows[name].reason = outcome["status"], outcome["reason"]
        else:
            strays.append(f"{name}: {outcome['status']} {outcome['reason']}")
    return list(rows.values()), strays


def cell(text: str, width: int = 0) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if not width or len(text) <= width else text[: width - 1] + "…"


def print_table(rows: list[Row], corpus: Path) -> None:
    print("| file | expected | actual | actual reason | checks | verdict |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        wanted = row.expected.status + (f" ~'{row.expected.reason_contains}'" if row.expected.reason_contains else "")
        reason = row.reason.replace(str(corpus) + "/", "")
        verdict = "ok" if not row.problems else "WRONG: " + "; ".join(row.problems)
        print(f"| {cell(row.name, 40)} | {cell(wanted)} | {row.status} | {cell(reason, 140)} | "
              f"{cell(', '.join(row.checks))} | {cell(verdict)} |")


def multi_face_check(workdir: Path, clip: Path) -> tuple[bool, str]:
    source = build_multi_face_source(workdir / "two_faces.png")
    proc = run_ffb(source, clip, workdir / "multi_out", workdir / "multi_temp", quiet=False)
    said = [line for line in proc.stderr.splitlines() if "faces in the source" in line]
    summary = f"exit {proc.returncode}; " + (said[0] if said else "no message about the source's faces")
    return bool(said) and "largest" in said[0], summary


def statuses(proc: subprocess.CompletedProcess) -> list[tuple[str, str]]:
    try:
        return [(o["status"], o["reason"]) for o in json.loads(proc.stdout)["outcomes"]]
    except (json.JSONDecodeError, KeyError):
        return [("(no summary)", proc.stderr[-300:])]


def output_disk_full_check(workdir: Path) -> tuple[bool | None, str]:
    """Four 3.6 MB images into a 10 MB tmpfs: two done, the other two 'output disk full' (one line each, the
    last not started), nothing journaled failed; after the disk grows, the next run does the two. None when
    no tmpfs can be mounted here (not root)."""
    targets, disk = workdir / "fill", workdir / "small"
    targets.mkdir()
    disk.mkdir()
    for name in "abcd":
        noise_face_png(targets / f"{name}.png")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=10m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        return None, "skipped (can't mount a tmpfs here)"
    try:
        first = statuses(run_ffb(SOURCE, targets, disk / "out", workdir / "fill_temp"))
        subprocess.run(["mount", "-o", "remount,size=40m", str(disk)], check=True)
        second = statuses(run_ffb(SOURCE, targets, disk / "out", workdir / "fill_temp"))
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
    full = [reason for status, reason in first if status == "failed"]
    ok = ([s for s, _ in first] == ["done", "done", "failed", "failed"]
          and all("output disk full" in r and "unexpected" not in r and "\n" not in r for r in full)
          and [s for s, _ in second] == ["skipped", "skipped", "done", "done"])
    return ok, f"first run {[s for s, _ in first]}, after space freed {[s for s, _ in second]}; " + \
        (full[-1][-120:] if full else "no failure reason")


def renamed_over_check(workdir: Path) -> tuple[bool, str]:
    """A 12-frame clip.mp4 renamed over by a 4-frame one after its frames are processed: not published
    (failed, changed while it was processed); the next run does the new file (4 frames); the one after
    skips it."""
    incoming, inject = workdir / "renamed", workdir / "inject"
    incoming.mkdir()
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(RENAME_OVER)
    face_clip(incoming / "clip.mp4", frames=12)
    upload = face_clip(workdir / "upload.mp4", frames=4)
    env = dict(os.environ, FFB_TEST_UPLOAD=str(upload),
               PYTHONPATH=os.pathsep.join(filter(None, [str(inject), os.environ.get("PYTHONPATH")])))
    out, temp = workdir / "renamed_out", workdir / "renamed_temp"
    runs = [statuses(run_ffb(SOURCE, incoming, out, temp, env=env)),
            statuses(run_ffb(SOURCE, incoming, out, temp)), statuses(run_ffb(SOURCE, incoming, out, temp))]
    times = decoded_times(out / "clip.mp4") if (out / "clip.mp4").exists() else None
    ok = (runs[0][0][0] == "failed" and "changed while it was processed" in runs[0][0][1]
          and runs[1][0][0] == "done" and runs[2][0][0] == "skipped" and times is not None and len(times) == 4)
    return ok, f"runs {[r[0][0] for r in runs]}, output frames {None if times is None else len(times)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the work directory and print its path")
    keep = parser.parse_args().keep
    workdir = Path(tempfile.mkdtemp(prefix="ffb-hostile-"))
    try:
        return report(workdir)
    finally:
        if keep:
            print(f"\nwork directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def report(workdir: Path) -> int:
    corpus, out, temp = workdir / "targets", workdir / "out", workdir / "temp"
    expected = build_corpus(corpus)
    proc = run_ffb(SOURCE, corpus, out, temp)
    print(f"ffb exit code {proc.returncode}")
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        print("ffb printed no JSON summary; stderr:\n" + proc.stderr[-4000:])
        return 1
    if "Traceback" in proc.stderr:
        print("ffb stderr has a traceback:\n" + proc.stderr[-4000:])
    rows, strays = rows_from(result, expected, corpus)
    for row in rows:
        judge(row, corpus, out)
    print_table(rows, corpus)
    left = leftovers(out, temp)
    print(f"\nleft over in output/temp dirs: {', '.join(left) if left else 'nothing'}")
    print(f"outcomes for unlisted paths (symlink loop etc.): {'; '.join(strays) if strays else 'none'}")
    again = rerun_problems(run_ffb(SOURCE, corpus, out, temp))
    print(f"re-run (cron): {'WRONG: ' + '; '.join(again) if again else 'ok, every target skipped, exit 0'}")
    marks = verify_problems(rows, out)
    print(f"ffb verify on the outputs: {'WRONG: ' + '; '.join(marks) if marks else 'ok, every one marked'}")
    manifests = manifest_problems(workdir / "manifests")
    print(f"ffb verify on claimed manifests: {'WRONG: ' + '; '.join(manifests) if manifests else 'ok'}")
    multi_ok, multi_summary = multi_face_check(workdir, corpus / "plain.mp4")
    print(f"two-face source: {'ok' if multi_ok else 'WRONG'} ({multi_summary})")
    full_ok, full_summary = output_disk_full_check(workdir)
    print(f"output disk full mid-run: {'skipped' if full_ok is None else 'ok' if full_ok else 'WRONG'} "
          f"({full_summary})")
    renamed_ok, renamed_summary = renamed_over_check(workdir)
    print(f"file renamed over a target while processed: {'ok' if renamed_ok else 'WRONG'} ({renamed_summary})")
    wrong = (sum(bool(r.problems) for r in rows) + bool(left) + bool(strays) + bool(again) + (not multi_ok)
             + bool(marks) + bool(manifests) + (full_ok is False) + (not renamed_ok))
    print(f"{wrong} problem(s)")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
