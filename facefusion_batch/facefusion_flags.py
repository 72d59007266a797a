"""FaceFusion 3.8.1's command line, read by `ffb run`: its names for ffb's options, and a clear word for each
of its options ffb does not have.

A FaceFusion user's `facefusion.py headless-run ...` line works as `ffb run ...` where ffb can do what it asks:
`--source-paths a.jpg b.jpg` are two sources, `--target-path`/`--output-path`/`--config-path` are ffb's
`--target`/`--output`/`--profile`. An option ffb does not have is either dropped with one warning (it would not
change the output: logging, downloads, job bookkeeping, a value that is FaceFusion's default anyway) or refused
with one line naming it and what to do instead (it would change the output, and ffb can't).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from facefusion_batch.errors import SettingsError
from facefusion_batch.facefusion_ini import UNSUPPORTED, flag, unsupported_note
from facefusion_batch.listing import listed

# FaceFusion's name -> ffb's flag, and how many values FaceFusion's takes ('+': several, passed on as one
# value that ffb's setting splits, or refuses with a clear word).
RENAMED: dict[str, tuple[str, int | str]] = {
    "--target-path": ("--target", 1),
    "--output-path": ("--output", 1),
    "--config-path": ("--profile", 1),
    "--execution-device-id": ("--execution-device-ids", "+"),  # ffb's former flag (one id), FaceFusion's is ffb's
    "--workflow-strategy": ("--frame-transport", 1),
}
# FaceFusion's values of a renamed flag -> ffb's (the others are the same word).
RENAMED_VALUES: dict[str, dict[str, str]] = {"--workflow-strategy": {"disk": "temp"}}
# FaceFusion's flag taking several files -> ffb's flag repeated once per file.
REPEATED: dict[str, str] = {"--source-paths": "--source"}
# FaceFusion's flags of options ffb does not have -> their ini key.
_UNSUPPORTED_FLAGS = {flag(key): key for key in UNSUPPORTED}


# FaceFusion's commands -> what to run with ffb (headless-run is ffb run itself).
COMMANDS: dict[str, str] = {
    "batch-run": "ffb run takes several targets: -t 'videos/*.mp4' (outputs mirror the tree under -o)",
    "force-download": "ffb models download NAME (ffb models list shows them)",
    "job-list": "ffb status OUTPUT_DIR shows a batch's journal (every target's status)",
    "job-run": "ffb run is resumable: run it again to finish what an interrupted run left",
}


@dataclass(frozen=True)
class Translated:
    """ffb's arguments for a FaceFusion-style command line, and one warning naming what was dropped."""

    args: list[str]
    warning: str | None = None


def translate(args: list[str], own: frozenset[str], valued: frozenset[str] = frozenset(),
              is_target: Callable[[str], bool] = lambda word: False) -> Translated:
    """`ffb run`/`ffb watch` arguments with FaceFusion's names made ffb's, and FaceFusion options ffb does not
    have dropped (listed in the warning) or refused (SettingsError naming the first such option and what to
    do). `own` holds the command's own flags: an option ffb has is never touched here, nor the value after one
    of `valued` (its flags taking a value: `-t --keep-temp` is a target of that name, as Click reads it).
    `--source-paths` takes images up to the first word `is_target` (a video or directory: ffb's positional
    target; FaceFusion has none)."""
    if not args:
        return Translated(args)
    if args[0] == "headless-run":
        args = ["run", *args[1:]]
    elif args[0] in COMMANDS:
        raise SettingsError(f"{args[0]} is FaceFusion's command; with ffb: {COMMANDS[args[0]]}")
    if args[0] not in ("run", "watch"):
        return Translated(args)
    out: list[str] = [args[0]]
    dropped: list[str] = []
    index = 1
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            out += args[index - 1:]
            break
        name, equals, value = arg.partition("=")
        if name in valued and not equals and index < len(args):
            out += [arg, args[index]]
            index += 1
            continue
        nargs = _nargs(name) if name not in own else None
        if nargs is None:
            out.append(arg)  # ffb's own, a value, or unknown (Typer reports it)
            continue
        values = [value] if equals else []
        if not equals and nargs == 1 and index < len(args) and (name in RENAMED or _is_value(args[index])):
            # a renamed flag takes the next word as Click takes an ffb flag's value; a flag dropped here takes
            # a value (-0.5 too) but never the next option, which argparse wouldn't either (-o out would lose -o)
            values.append(args[index])
            index += 1
        while not equals and nargs == "+" and index < len(args) and _is_value(args[index]) \
                and not (name in REPEATED and is_target(args[index])):
            values.append(args[index])
            index += 1
        if name in REPEATED and not values:
            raise SettingsError(f"{name} needs at least one image after it: {name} face.jpg (ffb's "
                                f"{REPEATED[name]} face.jpg)")
        if name in REPEATED:
            out += [part for v in values for part in (REPEATED[name], v)]
        elif name in RENAMED:
            words = [RENAMED_VALUES.get(name, {}).get(v, v) for v in values]
            out += [RENAMED[name][0], *([" ".join(words)] if words else [])]
        else:
            shown = f"{name} {' '.join(values)}".rstrip()
            dropped.append(unsupported_note(_UNSUPPORTED_FLAGS[name], " ".join(values), shown, shown))
    warning = None
    if dropped:
        warning = "FaceFusion options ffb does not have, ignored (they would not change the output): " + \
            listed(dropped, "; ")
    return Translated(out, warning)


def _nargs(name: str) -> int | str | None:
    """How many values a FaceFusion flag ffb translates takes (None: not one of those)."""
    if name in REPEATED:
        return "+"
    if name in RENAMED:
        return RENAMED[name][1]
    if name in _UNSUPPORTED_FLAGS:
        return UNSUPPORTED[_UNSUPPORTED_FLAGS[name]].nargs
    return None


def _is_value(word: str) -> bool:
    """A word after an option taking several values that is one of them (not the next option)."""
    if not word.startswith("-"):
        return True
    try:
        float(word)
        return True
    except ValueError:
        return False
