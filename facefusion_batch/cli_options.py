"""The options of `ffb run` and `ffb watch`: every setting's flag made from its declaration in settings.py (name,
help, type, choices, help panel by its section), and the few options that are no setting, declared once here.

A new setting gets its flag, help text and panel without a change here; its section must have a panel (a test
fails otherwise). The options a run takes (settings flags and the rest) come back to the command as one dict.
"""
from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from facefusion_batch.settings import DECLARED, Settings, choices, facefusion_spellings

FILES = "Faces and files"
SELECTOR = "Face selector"
PROCESSORS = "Processors (FaceFusion's flags; neural engine)"
MASKS = "Face masks (FaceFusion's flags)"
ENGINE = "Engine, models, face detection"
TRACKING = "Face tracking"
SWITCHES = "On/off settings"
PATHS = "Paths and temporary frames"
EXECUTION = "Execution, memory, Ray"
OUTPUT = "Output"
MARKING = "Marking and provenance"
BATCH = "Batch"
WATCH = "Watch"

# `ffb run --help` in groups, so that ~70 options read as a few short lists (and an 80-column terminal shows every
# flag's name whole): each profile section's settings go in one panel, in this order; the on/off settings
# (--x/--no-x) in one of their own, as their second name takes a column of its own beside every flag of a panel.
PANEL_OF_SECTION: dict[str, str] = {
    "face_selector": SELECTOR, "processors": PROCESSORS, "face_masker": MASKS, "face_landmarker": MASKS,
    "face_swapper": ENGINE, "face_detector": ENGINE, "face_tracker": TRACKING, "paths": PATHS,
    "frame_extraction": PATHS, "download": PATHS, "execution": EXECUTION, "memory": EXECUTION,
    "output_creation": OUTPUT, "patterns": OUTPUT, "provenance": MARKING, "misc": BATCH,
}
PANELS: tuple[str, ...] = (FILES, WATCH, SELECTOR, PROCESSORS, MASKS, ENGINE, TRACKING, SWITCHES, PATHS, EXECUTION,
                           OUTPUT, MARKING, BATCH)

# Settings whose flag is an option below, named for what a user does (the reason each has no flag of its own).
NO_FLAG_OF_ITS_OWN: dict[str, str] = {
    "output_path": "--output (-o), which FaceFusion's --output-path also reaches",
    "reference_face_path": "--reference-face, which also sets --face-selector-mode reference",
    "output_marking": "--no-marking: marking is on unless turned off",
    "output_watermark": "--watermark / --no-watermark",
}

_HINTS = typing.get_type_hints(Settings)
LONG_CHOICES = 14  # characters: a longer `<a|b|c>` list squeezes the flag names; it goes in the help text


def _option(default: Any, *decls: str, panel: str | None, **kwargs: Any) -> Any:
    """A dataclass field holding its Typer option (default and help panel)."""
    return field(default=default, metadata={"option": typer.Option(default, *decls, rich_help_panel=panel,
                                                                   **kwargs)})


@dataclass(frozen=True)
class Shared:
    """The options of `ffb run` and `ffb watch` that are no setting."""

    source: Optional[list[Path]] = _option(
        None, "--source", "-s", panel=FILES, help="Image of the face to put into the targets; repeat (-s a.jpg -s "
        "b.jpg) to average several photos of one person into one identity (neural engine); FaceFusion's "
        "--source-paths a.jpg b.jpg works too.")
    target: Optional[list[str]] = _option(
        None, "--target", "-t", panel=FILES, help="Video, image, directory (searched recursively) or quoted glob "
        "('clips/**/*.mp4': outputs mirror the tree below clips/); repeat, or list more after it (FaceFusion's "
        "--target-path works too).")
    more_targets: Optional[list[str]] = field(default=None, metadata={"option": typer.Argument(
        None, metavar="TARGET", help="More targets, e.g. what an unquoted clips/*.mp4 expands to.",
        show_default=False)})
    output: Optional[Path] = _option(
        None, "--output", "-o", panel=FILES, help="Output directory (mirrors the target tree), or with one target "
        "the output file (-o result.mp4; FaceFusion's --output-path works too). Default: output_path from the "
        "profile, else ./output")
    profile: Optional[Path] = _option(
        None, "--profile", "-p", panel=FILES, help="Settings file: a FaceFusion facefusion.ini as it is "
        "(FaceFusion's --config-path works too), or ffb's .ini or .toml. Precedence: defaults < profile < FFB_* "
        "env < flags.")
    many_faces: bool = _option(False, "--many-faces", panel=SELECTOR,
                               help="Swap every face (same as --face-selector-mode many).")
    reference_face: Optional[Path] = _option(None, "--reference-face", panel=SELECTOR, help="Image of the face to "
                                             "replace; implies --face-selector-mode reference.")
    no_marking: bool = _option(False, "--no-marking", panel=MARKING, help="Don't mark outputs as AI-modified at "
                               "all: no metadata, no C2PA (not advised).")
    watermark: bool = _option(False, "--watermark", panel=MARKING, help="Invisible watermark: the output's id in "
                              "every swapped frame (the default; overrides a profile's output_watermark = false).")
    no_watermark: bool = _option(False, "--no-watermark", panel=MARKING, help="No invisible watermark in the "
                                 "frames (the C2PA credential and metadata tags stay).")
    retry_failed: bool = _option(False, "--retry-failed", panel=BATCH, help="Also retry targets whose last run "
                                 "failed though they are unchanged (changed and new targets always run).")
    wait: bool = _option(False, "--wait", panel=BATCH, help="If another ffb run holds this output, wait for it "
                         "instead of exiting (exit code 6).")
    print_settings: bool = _option(False, "--print-settings", panel=BATCH,
                                   help="Show the resolved settings and exit.")
    as_json: bool = _option(False, "--json", panel=BATCH, help="Print the summary on stdout as one line of JSON "
                            "(run id, start/end time UTC, version, engine, counts, outcomes); errors too.")
    quiet: bool = _option(False, "--quiet", "-q", panel=BATCH, help="No progress output.")


@dataclass(frozen=True)
class RunOnly:
    """Options of `ffb run` that `ffb watch` does not take: every file is done once per change anyway (--force
    would have nothing to mean after the first lot), and the watch serves its metrics (--metrics-port)."""

    force: bool = _option(False, "--force", panel=BATCH,
                          help="Redo targets the journal says are finished and unchanged.")
    metrics_file: Optional[Path] = _option(
        None, "--metrics-file", panel=BATCH, help="Write Prometheus metrics to this file every 15 s and at the "
        "end, atomically: for node_exporter's textfile collector, a *.prom file in its directory.")


@dataclass(frozen=True)
class WatchOnly:
    """What `ffb watch` adds to the options of `ffb run`."""

    settle: float = _option(3.0, "--settle", panel=WATCH, min=0.0, help="Seconds a file must stay unchanged (size "
                            "and modification time) before it is taken: longer for slow uploads.")
    poll: bool = _option(False, "--poll", panel=WATCH, help="Poll the directories (every second) instead of "
                         "filesystem events: for network filesystems (NFS, SMB) where events from other machines "
                         "never arrive.")
    metrics_port: Optional[int] = _option(None, "--metrics-port", panel=WATCH, min=0, max=65535, help="Serve "
                                          "Prometheus metrics at http://BIND:PORT/metrics while watching (e.g. "
                                          "9101).")
    metrics_bind: str = _option("127.0.0.1", "--metrics-bind", panel=WATCH, help="Address the metrics endpoint "
                                "listens on (0.0.0.0: every interface; it has no authentication).")


def take(group: type, options: dict[str, Any]) -> Any:
    """The options of one group (a dataclass above) out of a command's options."""
    return group(**{f.name: options[f.name] for f in dataclasses.fields(group)})


def setting_parameter(name: str) -> inspect.Parameter:
    """The option of one setting: `--name-with-dashes`, typed as the setting, or as text where the value may be
    written FaceFusion's way (640x640, yolo_face) or is a list (FaceFusion's several values after one flag)."""
    declared, hint = DECLARED[name], _HINTS[name]
    allowed, plural = choices(name), typing.get_origin(hint) is tuple
    flag = f"--{name.replace('_', '-')}"
    helps = [declared.help]
    if facefusion_spellings(name):
        helps.append(f"Also FaceFusion's {', '.join(facefusion_spellings(name))}.")
    metavar, panel = None, PANEL_OF_SECTION.get(declared.section)
    if plural or facefusion_spellings(name) is not None:
        kind: Any = str
        metavar = name.rsplit("_", 1)[-1].upper().removesuffix("S") + ("..." if plural else "")
    else:
        kind = _optional_of(hint)
    if kind is bool:
        flag, metavar, panel = f"{flag}/--no-{flag[2:]}", "", SWITCHES
    option = typer.Option(None, flag, help=escape(" ".join(helps)), metavar=metavar, rich_help_panel=panel)
    _choices_in_words(option, allowed if kind is str or len("|".join(allowed)) > LONG_CHOICES else (), name)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[kind], default=option)


def _optional_of(hint: Any) -> Any:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1 else hint


def _choices_in_words(option: Any, allowed: tuple[str, ...], name: str) -> None:
    """A long list of choices shows as a short metavar (the flag's last word) with the choices in the help text,
    where they wrap (Typer's `[a|b|c]` beside the flag squeezes every flag name)."""
    if not allowed:
        return
    if option.metavar is None:
        option.metavar = name.rsplit("_", 1)[-1].upper()
    if not all(value in option.help for value in allowed):
        option.help = f"{option.help} Choices: {', '.join(allowed)}."


def _own_parameters(group: type) -> list[inspect.Parameter]:
    hints = typing.get_type_hints(group)
    parameters = []
    for spec in dataclasses.fields(group):
        option = spec.metadata["option"]
        if hints[spec.name] is bool:
            option.metavar = ""  # a flag takes no value: no `<bool>` beside it (it read as if it took one)
        parameters.append(inspect.Parameter(spec.name, inspect.Parameter.KEYWORD_ONLY, annotation=hints[spec.name],
                                            default=option))
    return parameters


def signature(*groups: type) -> inspect.Signature:
    """A command's parameters: the groups' options and every setting's, ordered by help panel (Typer shows the
    panels in the order their first option comes)."""
    settings = [setting_parameter(name) for name in DECLARED if name not in NO_FLAG_OF_ITS_OWN]
    parameters = [p for group in groups for p in _own_parameters(group)] + settings
    parameters.sort(key=lambda p: PANELS.index(p.default.rich_help_panel)
                    if getattr(p.default, "rich_help_panel", None) in PANELS else -1)
    return inspect.Signature(parameters, return_annotation=int)


def command(function: Any, *groups: type) -> Any:
    """`function(**options)` with the signature Typer reads: the groups' options and every setting's."""
    function.__signature__ = signature(*groups)
    function.__annotations__ = {p.name: p.annotation for p in function.__signature__.parameters.values()}
    return function


def setting_flags(options: dict[str, Any]) -> dict[str, Any]:
    """The settings the command line gives (None: not given), from the options of run or watch."""
    flags = {name: options[name] for name in DECLARED if name not in NO_FLAG_OF_ITS_OWN}
    mode = "many" if options["many_faces"] else options["face_selector_mode"]
    flags.update(
        output_path=options["output"], reference_face_path=options["reference_face"],
        face_selector_mode=mode or ("reference" if options["reference_face"] else None),
        output_marking=False if options["no_marking"] else None,
        output_watermark=True if options["watermark"] else False if options["no_watermark"] else None,
        executor=options["executor"] or ("ray" if options["ray_address"] else None))
    return flags


def panels_of(sig: inspect.Signature) -> dict[str, tuple[str, ...]]:
    """Each help panel's options, in order."""
    found: dict[str, list[str]] = {panel: [] for panel in PANELS}
    for parameter in sig.parameters.values():
        panel = getattr(parameter.default, "rich_help_panel", None)
        if panel in found:
            found[panel].append(parameter.name)
    return {panel: tuple(names) for panel, names in found.items() if names}


# `ffb run` flags that take several values after one flag, as FaceFusion's (argparse nargs='+'): the list settings.
MULTI_VALUE_FLAGS: tuple[str, ...] = tuple(f"--{name.replace('_', '-')}" for name in DECLARED
                                           if typing.get_origin(_HINTS[name]) is tuple)
