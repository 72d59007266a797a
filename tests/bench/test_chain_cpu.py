"""benchmarks/chain_cpu.py: the chain's CPU per frame, split into the model calls and ffb's own work."""
import re
import sys
from pathlib import Path

from facefusion_batch.bench import clips

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "examples" / "source.jpg"
sys.path.insert(0, str(ROOT / "benchmarks"))

import chain_cpu  # noqa: E402
import standin_models  # noqa: E402


def test_chain_cpu_splits_model_and_own_cpu(tmp_path, capsys, monkeypatch):
    models = tmp_path / "models"
    models.mkdir()
    standin_models.build(models, standin_models.bench_face(SOURCE), convs=1, channels=4)
    clip, _ = clips.ensure_clip(tmp_path / "clips", "240p", 0.2, SOURCE, True)
    profile = tmp_path / "chain.ini"
    profile.write_text("[processors]\nprocessors = face_swapper face_enhancer\nface_swapper_model = hyperswap_1a_256\n"
                       "face_enhancer_model = gfpgan_1.4\n[face_masker]\nface_mask_types = box occlusion region\n")
    monkeypatch.setenv("FFB_MODELS_PATH", str(models))
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    monkeypatch.setenv("FFB_TEMP_PATH", str(tmp_path / "temp"))
    assert chain_cpu.main([str(clip), "--profile", str(profile), "--frames", "3", "--rounds", "1"]) == 0
    line = capsys.readouterr().out.strip()
    numbers = re.fullmatch(r"round 0: thread CPU ([\d.]+) ms/frame = models ([\d.]+) \+ own ([\d.]+); process CPU "
                           r"([\d.]+) \(own incl\. OpenCV threads ([\d.-]+)\); wall ([\d.]+)", line)
    assert numbers, line
    thread, in_models, own = (float(numbers.group(i)) for i in (1, 2, 3))
    assert in_models > 0 and own > 0 and abs(thread - in_models - own) < 0.2
