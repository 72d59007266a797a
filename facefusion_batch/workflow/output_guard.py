"""Outputs stay inside the output directory: a symbolic link in the output tree that points elsewhere
(planted, or left by an old layout) must not make ffb write there; and the directory must be writable."""
from __future__ import annotations

import time
from pathlib import Path

from facefusion_batch.errors import OutputError, TargetError


def prepare_output(root: Path, output: Path, target: Path) -> None:
    """Create `output`'s directories under `root` one level at a time, checking after each that it still
    resolves inside `root`, and check the output file itself; TargetError (naming `target`, the link and
    the fix) when any leads outside. Outputs not under `root` (a worker's staging area) are only created."""
    try:
        relative = output.relative_to(root)
    except ValueError:
        output.parent.mkdir(parents=True, exist_ok=True)
        return
    real_root = root.resolve()
    current = root
    for part in relative.parts[:-1]:
        current = current / part
        _check(current, real_root, root, target)
        if not current.is_dir():
            current.mkdir()
        _check(current, real_root, root, target)  # a link created meanwhile
    _check(output, real_root, root, target)


def _check(path: Path, real_root: Path, root: Path, target: Path) -> None:
    if not (path.is_symlink() or path.exists()):
        return
    resolved = path.resolve()
    if resolved != real_root and not resolved.is_relative_to(real_root):
        raise TargetError(f"{target}: its output {path} leads outside the output directory {root} (to "
                          f"{resolved}, through a symbolic link); remove the link or choose another --output")


def check_output_dir(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # a hidden temp name (`.*.tmp` with `.ffb-`): one a killed run leaves is swept like its partial outputs
        probe = directory / f".ffb-write-test-{time.monotonic_ns()}.tmp"
        probe.write_bytes(b"")
        probe.unlink(missing_ok=True)  # a run sweeping the tree may have taken it already
    except OSError as exc:
        raise OutputError(f"{directory}: output directory is not writable ({exc.strerror}); pass --output "
                          "with a directory you can write to") from None
