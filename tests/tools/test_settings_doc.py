"""docs/settings.md is generated from settings.py and must not go stale."""
import dataclasses
import importlib.util
import sys
from pathlib import Path

from facefusion_batch.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("settings_doc", ROOT / "tools" / "settings_doc.py")
settings_doc = importlib.util.module_from_spec(spec)
sys.modules["settings_doc"] = settings_doc
spec.loader.exec_module(settings_doc)


def test_every_setting_is_documented_under_its_section():
    text = settings_doc.render()
    for field in dataclasses.fields(Settings):
        section = text.index(f"## [{field.metadata['section']}]")
        assert text.index(f"| `{field.name}` |") > section


def test_docs_settings_md_is_current():
    assert settings_doc.main(["--check"]) == 0, "docs/settings.md is stale: run python tools/settings_doc.py"
