"""Target discovery (files, directories, globs) and output paths that mirror the input tree."""
from __future__ import annotations

import glob
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from facefusion_batch.media import IMAGE_EXTENSIONS, UNPROCESSED, VIDEO_EXTENSIONS, kind_of


@dataclass(frozen=True)
class Target:
    path: Path
    kind: str  # "video" | "image"
    output: Path


@dataclass(frozen=True)
class Rejected:
    path: Path
    reason: str
    status: str = "failed"  # "skipped": another name of a file that is a target (done once, under that name)


def _walk(directory: Path, skip: Path) -> list[Path]:
    """Media files under `directory`, sorted; symlinked directories are not followed (no loops)."""
    found = []
    for root, dirs, files in os.walk(directory, followlinks=False):
        root_path = Path(root)
        dirs[:] = sorted(d for d in dirs if (root_path / d).resolve() != skip and not d.startswith("."))
        found += [root_path / f for f in sorted(files) if kind_of(Path(f)) and not f.startswith(".")]
    return found


def _unprocessed(directory: Path, skip: Path) -> list[Rejected]:
    """FaceFusion's target formats that ffb does not process, under `directory`: each named, with the fix."""
    found = []
    for root, dirs, files in os.walk(directory, followlinks=False):
        root_path = Path(root)
        dirs[:] = sorted(d for d in dirs if (root_path / d).resolve() != skip and not d.startswith("."))
        found += [Rejected(root_path / f, UNPROCESSED[Path(f).suffix.lower()]) for f in sorted(files)
                  if Path(f).suffix.lower() in UNPROCESSED and not f.startswith(".")]
    return found


# FaceFusion 3.8.1's output_pattern placeholders that name an output after its target (core.process_batch);
# its {index} and {source_name} number and name a batch-run's jobs, which ffb has not (see settings).
PATTERN_FIELDS = ("target_name", "target_extension")


def pattern_name(pattern: str, target: Path) -> str:
    """The output file name `pattern` gives `target`: FaceFusion's {target_name} (the name without its
    extension) and {target_extension} (the extension, lower case, with its dot); "" keeps the target's name."""
    if not pattern:
        return target.name
    return pattern.format(target_name=target.stem, target_extension=target.suffix.lower())


def discover(specs: Sequence[str], output_dir: Path, output_file: Path | None = None, pattern: str = ""
             ) -> tuple[list[Target], list[Rejected]]:
    """Expand target specs into targets with output paths; explain every spec that yields nothing usable.

    Outputs mirror the tree: below a directory given as a target, and below the fixed (non-magic) start of a
    glob, so `up/**/*.mp4` gives out/a/x.mp4 and out/b/x.mp4, not two out/x.mp4. A file named on its own
    keeps only its name. Files in the output directory are never targets of a directory or glob (a re-run
    of `-t 'clips/**' -o clips/out` must not take its own outputs as inputs).
    With `output_file` (-o result.mp4) the one target is written there (several would all claim it); else
    `pattern` (output_pattern) names each output in its directory, and an output of another kind than its
    target (a video named .png) is refused.
    """
    targets: list[Target] = []
    rejected: list[Rejected] = []
    skip = output_dir.resolve()
    for spec in specs:
        found = len(targets)
        if glob.has_magic(spec) and not os.path.lexists(spec):  # a file may be named a[1].mp4
            base: Path | None = glob_base(spec)
            matches = sorted(Path(p) for p in glob.glob(spec, recursive=True))
            if not matches:
                rejected.append(Rejected(Path(spec), "no file matches this pattern"))
            matches = [m for m in matches if not _inside(m, skip)]
        else:
            base, matches = None, [Path(spec)]
        for path in matches:
            if path.is_dir():
                files = _walk(path, skip)
                unprocessed = _unprocessed(path, skip)
                rejected += unprocessed
                if not files and not unprocessed and base is None:
                    rejected.append(Rejected(path, "directory holds no video or image files"))
                targets += [Target(f, kind_of(f) or "", output_dir / _below(f, base or path)) for f in files]
            elif not path.exists():
                rejected.append(Rejected(path, "no such file or directory"))
            elif kind_of(path) is None and path.suffix.lower() in UNPROCESSED:
                rejected.append(Rejected(path, UNPROCESSED[path.suffix.lower()]))
            elif kind_of(path) is None:
                if base is None:  # a glob such as clips/* matching notes.txt beside the videos is no mistake
                    supported = " ".join(VIDEO_EXTENSIONS + IMAGE_EXTENSIONS)
                    rejected.append(Rejected(path, f"unsupported extension '{path.suffix}'; supported: {supported}"))
            else:
                targets.append(Target(path, kind_of(path) or "", output_dir / _below(path, base or path.parent)))
        if base is not None and matches and len(targets) == found:
            rejected.append(Rejected(Path(spec), "pattern matches no video or image files"))
    if output_file is not None:
        targets = [Target(t.path, t.kind, output_file) for t in targets]
    elif pattern:
        named = [Target(t.path, t.kind, t.output.parent / pattern_name(pattern, t.path)) for t in targets]
        rejected += [Rejected(t.path, f"output_pattern names its output {t.output.name}, not a {t.kind} file "
                                      "name; keep {target_extension} or an extension of its kind")
                     for t in named if kind_of(t.output) != t.kind]
        targets = [t for t in named if kind_of(t.output) == t.kind]
    kept, rejected = _deduplicate(targets, rejected)
    return _one_name_per_file(kept, rejected)


def resolved(path: Path) -> Path:
    """The path with links resolved; a link loop can't be, and stays as it is (absolute): reading it fails,
    and that failure is the target's."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return Path(os.path.abspath(path))


def _below(path: Path, base: Path) -> Path:
    """`path` relative to `base`, which a glob or directory walk put above it (its name if not, to be safe)."""
    try:
        return path.relative_to(base)
    except ValueError:
        return Path(path.name)


def glob_base(pattern: str) -> Path:
    """The leading directories of a glob pattern that hold no wildcard: `up/**/*.mp4` -> `up`, `*.mp4` -> `.`."""
    parts = Path(pattern).parts
    fixed = []
    for part in parts:
        if glob.has_magic(part):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def _inside(path: Path, directory: Path) -> bool:
    real = resolved(path)
    return real == directory or directory in real.parents


def _deduplicate(targets: list[Target], rejected: list[Rejected]) -> tuple[list[Target], list[Rejected]]:
    inputs = {resolved(t.path) for t in targets}
    seen: dict[Path, Path] = {}
    kept: list[Target] = []
    for target in targets:
        source, out = resolved(target.path), resolved(target.output)
        if source in seen.values() and seen.get(out) == source:
            continue  # the same file named twice
        if out in inputs:
            rejected.append(Rejected(target.path, f"output {target.output} would overwrite an input; "
                                                  "choose another --output directory"))
        elif out in seen:
            rejected.append(Rejected(target.path, f"output {target.output} is also the output of {seen[out]}; "
                                                  "pass these targets in separate runs, or quote a glob "
                                                  "('clips/**/*.mp4') so ffb mirrors the tree below it"))
        else:
            seen[out] = source
            kept.append(target)
    return kept, rejected


def file_key(path: Path) -> tuple[int, int] | None:
    """What names one file whatever the name (device, inode; links followed); None when it can't be looked
    at or is no regular file."""
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def _one_name_per_file(targets: list[Target], rejected: list[Rejected]) -> tuple[list[Target], list[Rejected]]:
    """Several names of one file (a `latest.mp4` link beside the file it names, hard links) are one target:
    the first name that is no symbolic link (else the first), in the order found, so every run picks the
    same one and the journal holds one row for the file; the others are skipped, saying so."""
    names: dict[tuple[int, int], list[int]] = {}
    for index, target in enumerate(targets):
        key = file_key(target.path)
        if key is not None:
            names.setdefault(key, []).append(index)
    dropped: set[int] = set()
    for indices in names.values():
        if len(indices) < 2:
            continue
        chosen = next((i for i in indices if not targets[i].path.is_symlink()), indices[0])
        for index in indices:
            if index == chosen:
                continue
            dropped.add(index)
            path = targets[index].path
            kind = "a symbolic link to it" if path.is_symlink() else "a hard link of it"
            rejected.append(Rejected(path, f"the same file as {targets[chosen].path} ({kind}); processed once, "
                                           "under that name", "skipped"))
    return [t for i, t in enumerate(targets) if i not in dropped], rejected


_SPECIAL = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


def special_kind(mode: int) -> str | None:
    """What a file of this st_mode is when it isn't a regular file (None when it is one)."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _SPECIAL if test(mode)), "not a regular file")


def not_regular(path: Path) -> str | None:
    """Why `path` (links followed) can't be a target although its name says it could, or None for a regular
    file (or one that can't be looked at: reading it then gives the reason). Reading a FIFO or /dev/zero
    would never end."""
    try:
        kind = special_kind(path.stat().st_mode)
    except OSError:
        return None
    if kind is None:
        return None
    link = f" (a link to {os.path.realpath(path)})" if path.is_symlink() else ""
    return f"{path}: is {kind}{link}, not a regular file; only video and image files can be processed"
