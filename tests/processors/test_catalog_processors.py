import numpy as np
import pytest

from facefusion_batch.faces.geometry import WARP_TEMPLATES
from facefusion_batch.models.catalog import CATALOG, ENHANCERS, SWAPPERS, TEMPLATES

FACEFUSION_SWAPPERS = ["hyperswap_1a_256", "hyperswap_1b_256", "hyperswap_1c_256", "inswapper_128",
                       "inswapper_128_fp16", "simswap_256", "simswap_unofficial_512", "ghost_1_256", "ghost_2_256",
                       "ghost_3_256", "blendswap_256", "uniface_256", "hififace_unofficial_256"]
FACEFUSION_ENHANCERS = ["codeformer", "gfpgan_1.2", "gfpgan_1.3", "gfpgan_1.4", "gpen_bfr_256", "gpen_bfr_512",
                        "gpen_bfr_1024", "gpen_bfr_2048", "restoreformer_plus_plus"]


def test_every_facefusion_processor_model_is_listed():
    assert sorted(SWAPPERS) == sorted(FACEFUSION_SWAPPERS)
    assert sorted(ENHANCERS) == sorted(FACEFUSION_ENHANCERS)
    for name in ["crossface_ghost", "crossface_simswap", "crossface_hififace", "xseg_1", "xseg_2", "xseg_3",
                 "bisenet_resnet_18", "bisenet_resnet_34", "fairface"]:
        assert name in CATALOG
    for spec in CATALOG.values():
        assert spec.url.endswith(f"/{spec.name}.onnx") and spec.hash_url.endswith(f"/{spec.name}.hash")
        assert spec.url.startswith("https://github.com/facefusion/facefusion-assets/releases/download/models-3.")


@pytest.mark.parametrize("name, release, kind, template, size, mean, std, converter", [
    ("hyperswap_1a_256", "models-3.3.0", "hyperswap", "arcface_128", 256, 0.5, 0.5, None),
    ("inswapper_128", "models-3.0.0", "inswapper", "arcface_128", 128, 0.0, 1.0, None),
    ("simswap_256", "models-3.0.0", "simswap", "arcface_112_v1", 256, (0.485, 0.456, 0.406),
     (0.229, 0.224, 0.225), "crossface_simswap"),
    ("simswap_unofficial_512", "models-3.0.0", "simswap", "arcface_112_v1", 512, 0.0, 1.0, "crossface_simswap"),
    ("ghost_2_256", "models-3.0.0", "ghost", "arcface_112_v1", 256, 0.5, 0.5, "crossface_ghost"),
    ("blendswap_256", "models-3.0.0", "blendswap", "ffhq_512", 256, 0.0, 1.0, None),
    ("uniface_256", "models-3.0.0", "uniface", "ffhq_512", 256, 0.5, 0.5, None),
    ("hififace_unofficial_256", "models-3.1.0", "hififace", "mtcnn_512", 256, 0.5, 0.5, "crossface_hififace"),
])
def test_swapper_facts(name, release, kind, template, size, mean, std, converter):
    spec = CATALOG[name]
    assert f"/{release}/" in spec.url
    assert (spec.kind, spec.template, spec.size, spec.converter) == (kind, template, size, converter)
    np.testing.assert_allclose(spec.mean, np.broadcast_to(mean, 3))
    np.testing.assert_allclose(spec.std, np.broadcast_to(std, 3))
    if converter:
        assert "/models-3.4.0/" in CATALOG[converter].url


def test_boost_sizes_and_enhancer_facts():
    assert CATALOG["inswapper_128"].boost_sizes == (128, 256, 384, 512, 768, 1024)
    assert CATALOG["hyperswap_1a_256"].boost_sizes == (256, 512, 768, 1024)
    assert CATALOG["simswap_unofficial_512"].boost_sizes == (512, 768, 1024)
    assert (CATALOG["gpen_bfr_256"].template, CATALOG["gpen_bfr_256"].size) == ("arcface_128", 256)
    assert (CATALOG["gpen_bfr_2048"].template, CATALOG["gpen_bfr_2048"].size) == ("ffhq_512", 2048)
    assert (CATALOG["xseg_3"].nhwc, CATALOG["xseg_3"].rgb, "/models-3.2.0/" in CATALOG["xseg_3"].url) == (True, False, True)
    assert (CATALOG["fairface"].template, CATALOG["fairface"].size) == ("arcface_112_v2", 224)


def test_licences_say_whether_commercial_use_is_allowed():
    for name in ["inswapper_128", "inswapper_128_fp16", "codeformer", "gpen_bfr_512", "simswap_256",
                 "blendswap_256", "hyperswap_1a_256"]:
        assert CATALOG[name].commercial is False, name
    for name in ["gfpgan_1.4", "restoreformer_plus_plus", "ghost_1_256", "fairface"]:
        assert CATALOG[name].commercial is True, name
    assert CATALOG["uniface_256"].commercial is None and "unknown" in CATALOG["uniface_256"].licence.lower()
    assert CATALOG["codeformer"].licence.startswith("S-Lab-1.0")  # non-commercial, as the column says


def test_warp_templates_are_facefusions():
    np.testing.assert_allclose(WARP_TEMPLATES["arcface_112_v1"][2], [0.5, 0.61154464])
    np.testing.assert_allclose(WARP_TEMPLATES["mtcnn_512"][0], [0.36562865, 0.46733799])
    for name in ("arcface_112_v2", "arcface_128", "ffhq_512"):
        np.testing.assert_allclose(TEMPLATES[name], WARP_TEMPLATES[name], atol=1e-6)
    for spec in CATALOG.values():
        assert spec.template is None or spec.template in WARP_TEMPLATES, spec.name
