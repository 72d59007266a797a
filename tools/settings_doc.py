"""Write docs/settings.md from the Settings declaration (section, key, type, default, role, range,
FaceFusion name, help).

    python tools/settings_doc.py           # rewrite docs/settings.md
    python tools/settings_doc.py --check   # exit 1 when docs/settings.md is stale (the tests run this)
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from pathlib import Path

from facefusion_batch import settings as settings_module

DOC = Path(__file__).resolve().parent.parent / "docs" / "settings.md"

HEADER = """# Settings

Generated from `facefusion_batch/settings.py` by `tools/settings_doc.py`; do not edit by hand (a test fails
when this file is stale). Every setting can be given in a profile (`--profile FILE`, ini or TOML, under its
section) or as an environment variable `FFB_<KEY>` (upper case), and as a flag of `ffb run` and `ffb watch`
(`--key-with-dashes`, see `ffb run --help`; `output_path` is `--output`, `reference_face_path`
`--reference-face`, `output_marking` `--no-marking`, `output_watermark` `--watermark`). Later sources win: defaults < profile < environment < flags. `ffb run --print-settings` shows the resolved values,
where each came from and each setting's role.

Each setting declares its role, what changing it does:
"""


def _type_name(name: str) -> str:
    choices = settings_module.choices(name)
    hint = typing.get_type_hints(settings_module.Settings)[name]
    if choices:
        many = typing.get_origin(hint) is tuple
        return ("list of " if many else "") + " \\| ".join(f"`{c}`" for c in choices)
    text = getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
    return text.replace("pathlib.", "").replace("NoneType", "None").replace(" | None", " (optional)")


# Defaults computed at run time, described rather than computed here (they depend on the machine).
COMPUTED = {
    "temp_path": "the system temp directory",
    "output_path": "`output`",
    "models_path": "`~/.cache/ffb/models`",
    "cache_path": "`~/.cache/ffb` (`$XDG_CACHE_HOME/ffb`)",
    "execution_thread_count": "CPU cores, at most 8",
}


def _default(field: dataclasses.Field) -> str:
    if field.default is dataclasses.MISSING:
        return COMPUTED.get(field.name, "(computed at run time)")
    value = field.default
    if value is None or value == "":
        return "(empty)"
    if isinstance(value, tuple):
        return "`" + " ".join(map(str, value)) + "`"
    return f"`{value}`"


def _role(name: str) -> str:
    declared = settings_module.DECLARED[name]
    engine = " (engine)" if declared.engine and declared.role != "engine" else ""
    fixed = ", fixed in watch" if declared.fixed else ""
    return f"{declared.role}{engine}{fixed}"


def _facefusion(name: str) -> str:
    key = settings_module.facefusion_name(name)
    return "—" if key is None else ("same" if key == name else f"`{key}`")


def _meaning(name: str) -> str:
    declared = settings_module.DECLARED[name]
    text = declared.help
    if declared.range is not None:
        low, high = declared.range
        text += f" Range {low:g}..{high:g}."
    return text.replace("|", "\\|")


def render() -> str:
    lines = [HEADER]
    lines += [f"- **{role}**: {meaning}" for role, meaning in settings_module.ROLES.items()]
    lines += ["- **(engine)** after an output role: the engine is built from it too (`ffb watch` rebuilds the "
              "engine on SIGHUP only when such a setting changes); **fixed in watch**: `ffb watch` keeps it for its "
              "whole life (a SIGHUP that changes it is refused with a message).", "",
              "The FaceFusion column gives FaceFusion 3.8.1's key for the setting (same: the same name; —: ffb's "
              "own).", ""]
    fields = dataclasses.fields(settings_module.Settings)
    for section in dict.fromkeys(f.metadata["section"] for f in fields):
        lines += [f"## [{section}]", "", "| key | type | default | role | FaceFusion | meaning |",
                  "|---|---|---|---|---|---|"]
        for field in fields:
            if field.metadata["section"] != section:
                continue
            name = field.name
            lines.append(f"| `{name}` | {_type_name(name)} | {_default(field)} | {_role(name)} | "
                         f"{_facefusion(name)} | {_meaning(name)} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/settings.md is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print(f"{DOC} is stale: run python tools/settings_doc.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
