"""`ffb run --engine neural --processors face_swapper face_enhancer --face-mask-types box occlusion region` end to
end, on a models dir laid out like FaceFusion's .assets/models (stand-ins + .hash sidecars), for every swapper
and every enhancer model, on a real-face video and an image."""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

import standins
from conftest import FACE_BOX, FRAME_H, FRAME_W, decode_all, detector_faces, face_frame, make_clip
from facefusion_batch.cli import main
from facefusion_batch.models.catalog import CATALOG, ENHANCERS, SWAPPERS
from facefusion_batch.processors.config import ProcessorConfig
from facefusion_batch.processors.swapper import Swapper, SwapperOptions
from facefusion_batch.video.probe import probe

# the invisible watermark is off: these tests measure what the chain's paste leaves of the background
CHAIN = ["--processors", "face_swapper", "face_enhancer", "--face-mask-types", "box", "occlusion", "region",
         "--no-watermark"]
BACKGROUND_MARGIN = 60  # px around the face box: every model's crop (and its box mask) lies within it


def _source_shape(name: str) -> tuple[int, ...]:
    return {"blendswap": (3, 112, 112), "uniface": (3, 256, 256)}.get(CATALOG[name].kind, (512,))


@pytest.fixture(scope="module")
def facefusion_models(tmp_path_factory) -> Path:
    """Every swapper, converter, enhancer, an occluder, a parser and fairface, as FaceFusion names them.
    Swappers return each channel's mean plus half the source feed (the face turns one colour that depends on
    the source); gfpgan_1.4 is a near-identity blur, the other enhancers return each channel's mean (they
    flatten the face's texture, so their work is visible); occluder and parser keep the whole crop."""
    directory = tmp_path_factory.mktemp("facefusion_assets_models")
    standins.build_arcface(directory / "arcface_w600k_r50.onnx")
    standins.build_scrfd(directory / "scrfd_2.5g.onnx", detector_faces(640 / max(FRAME_W, FRAME_H)))
    standins.build_inswapper(directory / "inswapper_128.onnx")
    standins.build_inswapper_fp16(directory / "inswapper_128_fp16.onnx")
    for name in SWAPPERS:
        if CATALOG[name].kind != "inswapper":
            standins.build_swapper(directory / f"{name}.onnx", CATALOG[name].size, _source_shape(name), "mean", 0.5)
    for family in ("ghost", "simswap", "hififace"):
        standins.build_converter(directory / f"crossface_{family}.onnx", np.eye(512)[::-1])
    for name in ENHANCERS:
        if name == "gfpgan_1.4":
            standins.build_gfpgan(directory / f"{name}.onnx")
        else:
            standins.build_enhancer(directory / f"{name}.onnx", CATALOG[name].size, "mean",
                                    weight_input=name == "codeformer")
    standins.build_occluder(directory / "xseg_1.onnx", np.ones((256, 256), np.float32))
    standins.build_parser(directory / "bisenet_resnet_34.onnx", np.ones((512, 512), np.int64))  # all skin
    standins.build_fairface(directory / "fairface.onnx")
    for model in directory.glob("*.onnx"):
        standins.write_facefusion_hash(model)
    return directory


@pytest.fixture
def ff_env(env_with, facefusion_models) -> Path:
    return env_with(facefusion_models)


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clip") / "talk.mp4", frames=3)


@pytest.fixture(scope="module")
def picture(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("picture") / "portrait.png"
    cv2.imwrite(str(path), face_frame())
    return path


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "source.png"
    cv2.imwrite(str(path), cv2.flip(face_frame(), 1))  # the mirrored face: another identity for the stand-ins
    return path


def run(capsys, *args: str) -> tuple[int, dict, str]:
    code = main(["run", "--engine", "neural", "--json", "-q", *args])
    captured = capsys.readouterr()
    out = captured.out.strip()
    return code, json.loads(out) if out.startswith("{") else {}, captured.err


def regions(before: np.ndarray, after: np.ndarray) -> tuple[float, float, float]:
    """Mean abs change inside the face, the 99.5th percentile of the change on the background (beyond the
    face box + BACKGROUND_MARGIN, the moving strip of the clip left out) and its mean."""
    diff = np.abs(after.astype(np.int16) - before.astype(np.int16)).max(axis=-1)
    x1, y1, x2, y2 = FACE_BOX.astype(int)
    inside = diff[..., y1 + 20:y2 - 20, x1 + 20:x2 - 20].mean()
    background = np.ones(diff.shape[-2:], bool)
    background[:, max(x1 - BACKGROUND_MARGIN, 0):x2 + BACKGROUND_MARGIN] = False
    background[-24:, :] = False
    outside = diff[..., background]
    return float(inside), float(np.percentile(outside, 99.5)), float(outside.mean())


def face_texture(frames: np.ndarray) -> float:
    """Standard deviation of the face's inner pixels per colour channel, averaged (a flattened face has little)."""
    x1, y1, x2, y2 = FACE_BOX.astype(int)
    return float(frames[..., y1 + 30:y2 - 30, x1 + 30:x2 - 30, :].reshape(-1, 3).astype(np.float32).std(0).mean())


@pytest.mark.parametrize("swapper", SWAPPERS)
def test_every_swapper_with_the_enhancer_and_masks_on_video(ff_env, clip, source, capsys, swapper):
    out = ff_env / "out" / "talk.mp4"
    code, summary, err = run(capsys, *CHAIN, "--face-swapper-model", swapper, "--face-enhancer-model", "gfpgan_1.4",
                             "-s", str(source), "-t", str(clip), "-o", str(out.parent))
    assert code == 0, err
    assert summary["counts"]["done"] == 1 and swapper in summary["models"]
    before, after = probe(clip), probe(out)
    assert after.frame_count == before.frame_count == 3 and after.audio_codec == "aac"
    inside, background_p995, background_mean = regions(decode_all(clip), decode_all(out))
    assert inside > 15, "the face must change"
    assert background_p995 <= 6 and background_mean < 1.0, "the background must stay within encode noise"


@pytest.mark.parametrize("enhancer", ENHANCERS)
def test_every_enhancer_after_the_swapper_on_an_image(ff_env, picture, source, capsys, enhancer):
    code, _, err = run(capsys, *CHAIN, "--face-swapper-model", "inswapper_128", "--face-enhancer-model", enhancer,
                       "-s", str(source), "-t", str(picture), "-o", str(ff_env / "out"))
    assert code == 0, err
    before, after = cv2.imread(str(picture)), cv2.imread(str(ff_env / "out" / "portrait.png"))
    assert after.shape == before.shape
    inside, background_p995, background_mean = regions(before, after)
    assert inside > 15 and background_p995 <= 2 and background_mean < 0.2
    if enhancer != "gfpgan_1.4":  # the 'mean' stand-ins flatten the face the swapper left textured
        code, _, err = run(capsys, "--processors", "face_swapper", "--face-mask-types", "box", "occlusion", "region",
                           "-s", str(source), "-t", str(picture), "-o", str(ff_env / "swapped"))
        assert code == 0, err
        swapped = cv2.imread(str(ff_env / "swapped" / "portrait.png"))
        assert face_texture(after) < 0.5 * face_texture(swapped)


def test_facefusion_ini_runs_as_is(ff_env, clip, source, capsys):
    """A FaceFusion-style ini: its [processors] and [face_masker] keys, in FaceFusion's names and formats."""
    ini = ff_env / "facefusion.ini"
    ini.write_text("[processors]\nprocessors = face_swapper face_enhancer\nface_swapper_model = hyperswap_1a_256\n"
                   "face_swapper_pixel_boost = 512x512\nface_enhancer_model = codeformer\nface_enhancer_blend = 70\n"
                   "face_enhancer_weight = 0.8\n[face_masker]\nface_occluder_model = xseg_1\n"
                   "face_parser_model = bisenet_resnet_34\nface_mask_types = box occlusion region\n"
                   "face_mask_regions = skin nose mouth\nface_mask_blur = 0.4\nface_mask_padding = 2 4\n"
                   "[face_selector]\nface_selector_mode = many\nface_selector_order = left-right\n")
    code, summary, err = run(capsys, "--profile", str(ini), "-s", str(source), "-t", str(clip),
                             "-o", str(ff_env / "out"))
    assert code == 0, err
    assert summary["counts"]["done"] == 1
    assert {"hyperswap_1a_256", "codeformer", "xseg_1", "bisenet_resnet_34"} <= set(summary["models"])
    inside, background_p995, _ = regions(decode_all(clip), decode_all(ff_env / "out" / "talk.mp4"))
    assert inside > 15 and background_p995 <= 6


def test_licence_warning_once_per_run(ff_env, clip, picture, source, capsys):
    code = main(["run", "--engine", "neural", *CHAIN, "--face-swapper-model", "ghost_1_256", "--face-enhancer-model",
                 "gpen_bfr_512", "-s", str(source), "-t", str(clip), "-t", str(picture), "-o", str(ff_env / "out")])
    err = capsys.readouterr().err
    assert code == 0, err
    warnings = [line for line in err.splitlines() if "commercial use" in line]
    assert len(warnings) == 1, err
    assert "gpen_bfr_512" in warnings[0] and "arcface_w600k_r50" in warnings[0]
    assert "ghost_1_256 (" not in warnings[0]  # Apache-2.0: allowed
    assert "xseg_1" in warnings[0]  # licence not stated: named as such


def test_licence_warning_reaches_quiet_and_json_runs(ff_env, picture, source, capsys):
    """-q drops progress, not the warning (said once, on stderr); --json carries it in `warnings`."""
    code, summary, err = run(capsys, "--face-swapper-model", "hyperswap_1a_256", "-s", str(source), "-t",
                             str(picture), "-o", str(ff_env / "out"))
    assert code == 0, err
    assert len(summary["warnings"]) == 1 and "hyperswap_1a_256 [" in summary["warnings"][0]
    warnings = [line for line in err.splitlines() if "commercial use" in line]
    assert len(warnings) == 1 and warnings[0].startswith("ffb: warning: not licensed for commercial use")


def test_missing_processor_models_are_named_in_one_line_with_the_fix(ff_env, facefusion_models, picture, source,
                                                                     capsys, tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    for name in ("arcface_w600k_r50", "scrfd_2.5g", "simswap_256"):
        for suffix in (".onnx", ".hash"):
            (models / f"{name}{suffix}").write_bytes((facefusion_models / f"{name}{suffix}").read_bytes())
    code, summary, err = run(capsys, *CHAIN, "--face-swapper-model", "simswap_256", "--face-enhancer-model",
                             "gpen_bfr_256", "--face-selector-gender", "female", "--models-path", str(models),
                             "-s", str(source), "-t", str(picture), "-o", str(tmp_path / "out"))
    assert code == 3
    assert err.strip().count("\n") == 0
    for name in ("crossface_simswap", "xseg_1", "bisenet_resnet_34", "gpen_bfr_256", "fairface"):
        assert f"{name}.onnx" in err, name
    assert "ffb models download crossface_simswap xseg_1 bisenet_resnet_34 gpen_bfr_256 fairface" in err
    assert "gender/race/age filters need it" in err
    assert not (tmp_path / "out" / "portrait.png").exists()


@pytest.mark.parametrize("args, says", [
    (["--face-swapper-model", "hyperswap_1a_256", "--face-swapper-pixel-boost", "384x384"],
     "hyperswap_1a_256 offers pixel boost 256x256, 512x512, 768x768, 1024x1024"),
])
def test_what_the_neural_engine_cannot_do_is_one_line_exit_2(ff_env, picture, source, capsys, args, says):
    code, summary, err = run(capsys, *args, "-s", str(source), "-t", str(picture), "-o", str(ff_env / "out"))
    assert code == 2 and summary["exit_code"] == 2
    assert says in err and err.strip().count("\n") == 0
    assert not (ff_env / "out" / "portrait.png").exists()


@pytest.mark.parametrize("args, says", [
    (["--processors", "face_swapper", "face_enhancer"], "face_enhancer (gfpgan_1.4)"),
    (["--face-mask-types", "box", "occlusion"], "occlusion masks"),
    (["--face-mask-types", "region"], "region masks"),
    (["--face-swapper-model", "hyperswap_1a_256"], "face_swapper_model hyperswap_1a_256"),
    (["--face-selector-race", "asian"], "face selector gender/race/age filters"),
    (["--face-mask-blur", "0.5"], "face_mask_blur / face_mask_padding"),
])
def test_offline_engine_refuses_what_needs_the_neural_models(ff_env, picture, source, capsys, args, says):
    code = main(["run", "--engine", "offline", "--json", "-q", *args, "-s", str(source), "-t", str(picture),
                 "-o", str(ff_env / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert says in err and "use --engine neural" in err and "ffb models download" not in err  # all present
    assert err.strip().count("\n") == 0
    assert not (ff_env / "out" / "portrait.png").exists()


def test_offline_refusal_names_the_neural_models_to_download(tmp_path, capsys, monkeypatch, picture, source):
    monkeypatch.delenv("FFB_MODELS_PATH", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # models_path at its default, empty (set, it
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))  # would ask for the neural engine: exit 3)
    code = main(["run", "-q", "--processors", "face_swapper", "face_enhancer", "--face-mask-types", "box", "occlusion",
                 "-s", str(source), "-t", str(picture), "-o", str(tmp_path / "out")])  # engine auto: offline here
    err = capsys.readouterr().err
    assert code == 2 and err.strip().count("\n") == 0
    assert "ffb models download inswapper_128 xseg_1 gfpgan_1.4 arcface_w600k_r50 scrfd_2.5g" in err


def test_micro_batched_chain_gives_the_same_frames(ff_env, clip, source, capsys, monkeypatch):
    """batch_size 4: the processor models get a dynamic batch axis (patched copies in the cache) and the frame
    threads' faces share calls; the frames are those of single calls."""
    outputs = {}
    for batch in ("1", "4"):
        monkeypatch.setenv("FFB_BATCH_SIZE", batch)
        code, _, err = run(capsys, *CHAIN, "--face-swapper-model", "hyperswap_1a_256", "--face-enhancer-model",
                           "gpen_bfr_256", "--output-video-quality", "100", "-s", str(source), "-t", str(clip),
                           "-o", str(ff_env / f"out{batch}"))
        assert code == 0, err
        outputs[batch] = decode_all(ff_env / f"out{batch}" / "talk.mp4").astype(np.int16)
    patched = {p.name.split(".dynamic")[0] for p in (ff_env / "cache" / "dynamic").glob("*.onnx")}
    assert {"hyperswap_1a_256", "gpen_bfr_256"} <= patched
    assert np.abs(outputs["1"] - outputs["4"]).max() <= 2


def test_enhancer_alone(ff_env, picture, source, capsys):
    """FaceFusion's `--processors face_enhancer`: the faces are enhanced, not swapped."""
    code, summary, err = run(capsys, "--processors", "face_enhancer", "--face-enhancer-model", "gpen_bfr_512",
                             "--no-watermark", "-s", str(source), "-t", str(picture), "-o", str(ff_env / "out"))
    assert code == 0, err
    assert "gpen_bfr_512" in summary["models"] and not any("swap" in m for m in summary["models"])
    before, after = cv2.imread(str(picture)), cv2.imread(str(ff_env / "out" / "portrait.png"))
    inside, background_p995, _ = regions(before, after)
    assert inside > 5 and background_p995 <= 2
    assert face_texture(after) < 0.5 * face_texture(before)


def test_model_calls_are_timed_under_the_models_names_when_batched(ff_env, monkeypatch):
    """Patched dynamic-batch copies (cache/dynamic/NAME.dynamic-...onnx) still count under NAME in the pool's
    timings (what `ffb benchmark` and the metrics report per model)."""
    from facefusion_batch.engines import build_engine
    from facefusion_batch.settings import load_settings
    from facefusion_batch.timing import Timings

    monkeypatch.setenv("FFB_BATCH_SIZE", "4")
    settings = load_settings(None, None, {"engine": "neural", "processors": "face_swapper face_enhancer",
                                          "face_swapper_model": "ghost_1_256", "face_enhancer_model": "codeformer",
                                          "face_mask_types": "box occlusion region"}).settings
    engine = build_engine(settings)
    try:
        engine.pool.timings = Timings()
        frame = face_frame()
        faces = engine.detect(frame)
        path = ff_env / "src.png"
        cv2.imwrite(str(path), cv2.flip(frame, 1))
        record = engine.prepare_source(path)
        engine.swap(frame, faces, record)
        names = set(engine.pool.timings.snapshot())
    finally:
        engine.close()
    assert {"ghost_1_256", "crossface_ghost", "codeformer", "xseg_1", "bisenet_resnet_34"} <= names, names
    assert not any(".dynamic" in name for name in names)


def test_the_neural_swap_leaves_the_frame_it_is_given_as_it_was(ff_env):
    """Faces found late are followed back through frames as decoded (workflow/backfill.py) and a face partly shown is
    blended with the frame it was swapped on (workflow/processor.py `_faded`): the swap returns a changed copy."""
    from facefusion_batch.engines import build_engine
    from facefusion_batch.settings import load_settings

    engine = build_engine(load_settings(None, None, {"engine": "neural"}).settings)
    try:
        frame = face_frame()
        faces = engine.detect(frame)
        path = ff_env / "src.png"
        cv2.imwrite(str(path), cv2.flip(frame, 1))
        before = frame.copy()
        out = engine.swap(frame, faces, engine.prepare_source(path))
    finally:
        engine.close()
    assert faces and (frame == before).all() and (out != before).any()


def test_source_cache_of_the_earlier_path_does_not_feed_the_chain(ff_env, picture, source, capsys):
    """Same models, same cache: a default run, then one with a mask setting (the chain): both swap."""
    for index, args in enumerate(([], ["--face-mask-blur", "0.31"], [])):
        code, summary, err = run(capsys, *args, "-s", str(source), "-t", str(picture), "-o", str(ff_env / f"o{index}"))
        assert code == 0 and summary["counts"]["done"] == 1, summary


WEIGHT_IGNORED = "face_swapper_weight 0.3 has no effect with"


@pytest.mark.parametrize("swapper", SWAPPERS)
def test_swapper_weight_warning_only_where_the_model_ignores_the_weight(swapper):
    """The warning's judgement agrees with what the adapter does: where `balance` gives the same source rows
    at weight 0.3 as at 0.5, the weight has no effect and the run says so."""
    spec = CATALOG[swapper]
    swapped = object.__new__(Swapper)  # balance() needs only the spec and the options
    swapped.spec = spec
    rows = []
    for weight in (0.3, 0.5):
        swapped.options = SwapperOptions(swapper, weight)
        source = np.ones((1, *_source_shape(swapper)), np.float32)
        rows.append(swapped.balance(source, np.full((1, 512), 2.0, np.float32), 1))
    ignored = ProcessorConfig(swapper=SwapperOptions(swapper, 0.3)).ignored_settings()
    assert bool(ignored) == np.array_equal(*rows)
    assert bool(ignored) == (swapper in ("blendswap_256", "uniface_256"))
    if ignored:
        assert ignored == [f"{WEIGHT_IGNORED} {swapper}: it takes the source face as an image, not an identity to "
                           "weigh (as in FaceFusion); use another face_swapper_model, e.g. hyperswap_1a_256, for the "
                           "weight to apply"]
    assert ProcessorConfig(swapper=SwapperOptions(swapper, 0.5)).ignored_settings() == []
    assert ProcessorConfig(("face_enhancer",), swapper=SwapperOptions(swapper, 0.3)).ignored_settings() == []


def test_swapper_weight_ignored_is_said_once_under_quiet_and_in_json(ff_env, clip, picture, source, capsys):
    code, summary, err = run(capsys, "--face-swapper-model", "blendswap_256", "--face-swapper-weight", "0.3",
                             "-s", str(source), "-t", str(clip), "-t", str(picture), "-o", str(ff_env / "out"))
    assert code == 0, err
    said = [line for line in err.splitlines() if WEIGHT_IGNORED in line]
    assert said == [f"ffb: warning: {WEIGHT_IGNORED} blendswap_256: it takes the source face as an image, not an "
                    "identity to weigh (as in FaceFusion); use another face_swapper_model, e.g. hyperswap_1a_256, "
                    "for the weight to apply"], err
    assert [w for w in summary["warnings"] if WEIGHT_IGNORED in w] == [said[0].removeprefix("ffb: warning: ")]
    assert summary["counts"]["done"] == 2


def test_swapper_weight_ignored_from_a_facefusion_ini(ff_env, picture, source, capsys):
    ini = ff_env / "facefusion.ini"
    ini.write_text("[processors]\nprocessors = face_swapper\nface_swapper_model = uniface_256\n"
                   "face_swapper_weight = 0.3\n")
    code = main(["run", "--engine", "neural", "--profile", str(ini), "-s", str(source), "-t", str(picture),
                 "-o", str(ff_env / "out")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert [line for line in err.splitlines() if WEIGHT_IGNORED in line] == \
        [line for line in err.splitlines() if "uniface_256: it takes the source face as an image" in line], err
    assert sum(WEIGHT_IGNORED in line for line in err.splitlines()) == 1, err


@pytest.mark.parametrize("args", [("--face-swapper-model", "hyperswap_1a_256", "--face-swapper-weight", "0.3"),
                                  ("--face-swapper-model", "blendswap_256")])
def test_no_swapper_weight_warning_where_the_weight_applies_or_is_left_alone(ff_env, picture, source, capsys, args):
    code, summary, err = run(capsys, *args, "-s", str(source), "-t", str(picture), "-o", str(ff_env / "out"))
    assert code == 0, err
    assert "face_swapper_weight" not in err and not any("face_swapper_weight" in w for w in summary["warnings"])


def test_a_ray_worker_hands_the_swapper_weight_warning_to_the_driver(ff_env, source):
    """`--executor ray`: the workers load the engine, so its warnings come back in their start-up report."""
    import os

    from facefusion_batch.executors.work_items import StorageCheck
    from facefusion_batch.executors.worker import FfbWorker
    from facefusion_batch.settings import load_settings

    settings = load_settings(None, os.environ, {"engine": "neural", "face_swapper_model": "uniface_256",
                                                "face_swapper_weight": 0.3, "output_path": ff_env / "out"}).settings
    check = StorageCheck("token", ff_env / "shared", ff_env / "out", (source,))
    for directory in (check.shared, check.output):
        directory.mkdir(parents=True)
        check.probe_file(directory).write_text("token")
    worker = FfbWorker(settings, source, check)
    try:
        info = worker.start()
    finally:
        if worker._processor is not None:
            worker._processor.engine.close()
    assert len(info.warnings) == 1 and info.warnings[0].startswith(f"{WEIGHT_IGNORED} uniface_256:")


@pytest.mark.parametrize("args", [("--processors", "face_swapper", "face_enhancer", "--face-swapper-model",
                                   "hyperswap_1a_256", "--face-enhancer-model", "gpen_bfr_512"),
                                  ("--face-swapper-model", "inswapper_128_fp16", "--face-swapper-pixel-boost",
                                   "256x256"),
                                  ("--processors", "face_swapper", "face_enhancer", "--face-mask-types", "box",
                                   "occlusion", "region")])
def test_face_work_on_the_device_path_gives_the_cpu_paths_picture(ff_env, picture, source, capsys, monkeypatch,
                                                                   args):
    """face_work = device (the ONNX graphs, here on the CPU provider) against face_work = cpu, end to end."""
    outputs = {}
    for where in ("cpu", "device"):
        monkeypatch.setenv("FFB_FACE_WORK", where)
        masks = () if "--face-mask-types" in args else ("--face-mask-types", "box")
        code, summary, err = run(capsys, *args, *masks, "--no-watermark", "-s", str(source),
                                 "-t", str(picture), "-o", str(ff_env / where))
        assert code == 0, err
        outputs[where] = cv2.imread(str(ff_env / where / "portrait.png")).astype(np.int16)
    before = cv2.imread(str(picture)).astype(np.int16)
    assert np.abs(outputs["device"] - before).max(axis=-1).mean() > 1  # the face was processed
    diff = np.abs(outputs["device"] - outputs["cpu"])
    assert diff.max() <= 2 and (diff > 1).mean() < 1e-3, (diff.max(), (diff > 1).sum())


def test_face_work_device_with_masks_it_does_not_do_is_refused_at_start(ff_env, picture, source, capsys,
                                                                         monkeypatch):
    monkeypatch.setenv("FFB_FACE_WORK", "device")
    code, _, err = run(capsys, "--face-mask-types", "box", "area", "-s", str(source), "-t", str(picture), "-o",
                       str(ff_env / "out"))
    assert code != 0 and "not the area mask" in err and not (ff_env / "out" / "portrait.png").exists()


def test_fp16_copies_of_the_processor_models_give_the_fp32_picture(ff_env, picture, source, capsys, monkeypatch):
    """With fp16 on (cuda_fp16 on a CUDA machine; forced here on the CPU provider), gpen_bfr_512 runs from a
    verified fp16 copy under cache_path/fp16, hyperswap_1a_256 (fp16 as FaceFusion ships it) as it is."""
    from facefusion_batch.models import sessions

    outputs = {}
    original = sessions.SessionPool.__init__
    for half in (False, True):
        monkeypatch.setattr(sessions.SessionPool, "__init__",
                            lambda self, settings, **kw: original(self, settings, **{**kw, "fp16": half}))
        code, _, err = run(capsys, "--processors", "face_swapper", "face_enhancer", "--face-swapper-model",
                           "hyperswap_1a_256", "--face-enhancer-model", "gpen_bfr_512", "--no-watermark",
                           "-s", str(source), "-t", str(picture), "-o", str(ff_env / f"out{half}"))
        assert code == 0, err
        outputs[half] = cv2.imread(str(ff_env / f"out{half}" / "portrait.png")).astype(np.int16)
    verdicts = sorted(p.name for p in (ff_env / "cache" / "fp16").iterdir())
    assert any(v.startswith("gpen_bfr_512-") and v.endswith(".fp16.accepted") for v in verdicts), verdicts
    assert not any(v.startswith("hyperswap") for v in verdicts)
    assert np.abs(outputs[True] - outputs[False]).max() <= 2


def test_a_model_the_device_path_cannot_feed_sends_auto_to_the_cpu_path(ff_env, picture, source, capsys,
                                                                         monkeypatch):
    from facefusion_batch.engines import neural
    from facefusion_batch.processors import build

    def refuse(*args, **kwargs):
        raise ValueError("xseg_1 has a fixed batch of 1")
    monkeypatch.setattr(build, "DeviceChain", refuse)
    monkeypatch.setenv("FFB_FACE_WORK", "device")
    code, _, err = run(capsys, "-s", str(source), "-t", str(picture), "-o", str(ff_env / "device"))
    assert code != 0 and "face_work = device: xseg_1 has a fixed batch of 1" in err
    monkeypatch.setenv("FFB_FACE_WORK", "auto")
    monkeypatch.setattr(neural, "device_face_work", lambda settings: True)  # as on a GPU
    code, _, err = run(capsys, "--no-watermark", "-s", str(source), "-t", str(picture), "-o", str(ff_env / "auto"))
    assert code == 0, err
    assert (ff_env / "auto" / "portrait.png").is_file()
