"""tools/import_graph.py: finds cycles and upward imports, lazy imports included."""
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


graph_tool = _tool("import_graph")


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "facefusion_batch" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_finds_a_cycle_through_a_lazy_import_and_an_upward_import(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "errors.py": "",
        "workflow/__init__.py": "",
        "workflow/engine.py": "from facefusion_batch.engines import neural\n",
        "engines/__init__.py": "",
        "engines/neural.py": "def f():\n    from facefusion_batch.workflow import engine\n",
    })
    edges = graph_tool.graph(root)
    assert edges["facefusion_batch.engines.neural"] == {"facefusion_batch.workflow.engine"}
    assert graph_tool.cycles(edges) == [["facefusion_batch.engines.neural", "facefusion_batch.workflow.engine"]]
    assert graph_tool.upward(edges) == [("facefusion_batch.engines.neural", "facefusion_batch.workflow.engine")]


def test_relative_and_type_checking_imports(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "errors.py": "",
        "models/__init__.py": "",
        "models/sessions.py": "from . import catalog\nfrom typing import TYPE_CHECKING\n"
                              "if TYPE_CHECKING:\n    from facefusion_batch.workflow import batch\n",
        "models/catalog.py": "from ..errors import X\n",
        "workflow/__init__.py": "",
        "runner/batch.py": "",
    })
    edges = graph_tool.graph(root)
    assert edges["facefusion_batch.models.sessions"] == {"facefusion_batch.models.catalog"}
    assert edges["facefusion_batch.models.catalog"] == {"facefusion_batch.errors"}
    assert graph_tool.upward(edges) == [] and graph_tool.cycles(edges) == []
    assert graph_tool.main(["--root", str(root)]) == 0


def test_the_package_has_no_cycle_and_no_upward_import():
    edges = graph_tool.graph(ROOT)
    assert "facefusion_batch.engines.base" in edges
    assert graph_tool.cycles(edges) == []
    assert graph_tool.upward(edges) == []
