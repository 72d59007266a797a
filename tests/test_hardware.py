"""`ffb detect-gpus` backend: nvidia-smi XML parsing, running nvidia-smi, provider probing, report and text."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from facefusion_batch import hardware
from facefusion_batch.errors import FfbError
from facefusion_batch.hardware import CPU, CUDA, TENSORRT, Gpu, HardwareError, ProviderReport

SAMPLES = Path(__file__).parent / "data" / "nvidia_smi"
H100 = SAMPLES / "h100_driver550.xml"
TWO_A6000 = SAMPLES / "two_a6000_driver535.xml"


def gpu(index: int, free: int | None, util: int | None) -> Gpu:
    return Gpu(index, "NVIDIA Test", f"GPU-{index}", None, 24000, free, util, "550.54.15", "12.4")


def test_parses_single_gpu_sample():
    [h100] = hardware.parse_nvidia_smi_xml(H100.read_text())
    assert h100 == Gpu(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-4f1c2a7e-9b3d-5e60-8a21-c7d94e0b3f58",
                       pci_bus_id="00000000:18:00.0", memory_total_mib=81559, memory_free_mib=81227,
                       utilisation_percent=3, driver_version="550.54.15", cuda_version="12.4",
                       temperature_c=31.0, power_draw_w=71.38)


def test_parses_two_gpu_sample_in_nvidia_smi_order_with_na_as_none():
    first, second = hardware.parse_nvidia_smi_xml(TWO_A6000.read_text())
    assert [first.index, second.index] == [0, 1]
    assert first.name == second.name == "NVIDIA RTX A6000"
    assert (first.memory_free_mib, second.memory_free_mib) == (9154, 48560)
    assert (first.utilisation_percent, second.utilisation_percent) == (87, None)  # <gpu_util>N/A</gpu_util>
    assert (second.driver_version, second.cuda_version) == ("535.161.07", "12.2")
    assert second.pci_bus_id == "00000000:41:00.0"


@pytest.mark.parametrize("value", ["N/A", "[N/A]", "[Not Supported]", ""])
def test_fields_without_a_value_are_none(value):
    xml = (f"<nvidia_smi_log><driver_version>{value}</driver_version><gpu><product_name>X</product_name>"
           f"<fb_memory_usage><total>{value}</total><free>{value}</free></fb_memory_usage>"
           f"<temperature><gpu_temp>{value}</gpu_temp></temperature>"
           f"<gpu_power_readings><power_draw>{value}</power_draw></gpu_power_readings></gpu></nvidia_smi_log>")
    [only] = hardware.parse_nvidia_smi_xml(xml)
    assert (only.memory_total_mib, only.memory_free_mib, only.temperature_c, only.power_draw_w,
            only.utilisation_percent, only.uuid, only.driver_version, only.cuda_version) == (None,) * 8


def test_newer_drivers_instant_power_draw_is_read():
    xml = ("<nvidia_smi_log><gpu><product_name>X</product_name><gpu_power_readings>"
           "<average_power_draw>80.00 W</average_power_draw><instant_power_draw>92.50 W</instant_power_draw>"
           "</gpu_power_readings></gpu></nvidia_smi_log>")
    assert hardware.parse_nvidia_smi_xml(xml)[0].power_draw_w == 92.5


@pytest.mark.parametrize("text", ["", "not xml at all", "<nvidia_smi_log><gpu>", "<html><body/></html>"])
def test_malformed_output_raises_a_typed_error(text):
    with pytest.raises(HardwareError) as caught:
        hardware.parse_nvidia_smi_xml(text)
    assert isinstance(caught.value, FfbError)
    assert "nvidia-smi" in str(caught.value)


def test_no_gpu_elements_parse_to_empty_list():
    assert hardware.parse_nvidia_smi_xml("<nvidia_smi_log><attached_gpus>0</attached_gpus></nvidia_smi_log>") == []


@pytest.mark.parametrize("gpus, expected", [
    ([], None),
    ([gpu(0, 9154, 87), gpu(1, 48560, None)], 1),        # most free memory wins
    ([gpu(0, 20000, 50), gpu(1, 20000, 10)], 1),         # tie: lower utilisation
    ([gpu(0, 20000, 10), gpu(1, 20000, 10)], 0),         # tie: lower index
    ([gpu(0, 20000, None), gpu(1, 20000, 99)], 1),       # unknown utilisation counts as busiest
    ([gpu(0, None, 0), gpu(1, 100, 100)], 1),            # unknown free memory counts as least
])
def test_best_device(gpus, expected):
    best = hardware.best_device(gpus)
    assert (None if best is None else best.index) == expected


def fake_nvidia_smi(directory: Path, body: str) -> Path:
    script = directory / "nvidia-smi"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_query_without_nvidia_smi_on_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    gpus, reason = hardware.query_nvidia_smi()
    assert gpus == [] and "not found" in reason


def test_query_runs_nvidia_smi_from_path(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, f'[ "$1 $2" = "-q -x" ] || exit 2\ncat "{TWO_A6000}"')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")
    gpus, reason = hardware.query_nvidia_smi()
    assert reason is None
    assert [g.memory_free_mib for g in gpus] == [9154, 48560]


def test_query_reports_failure_with_nvidia_smis_message(tmp_path):
    script = fake_nvidia_smi(tmp_path, "echo \"NVIDIA-SMI has failed because it couldn't communicate with the "
                                       "NVIDIA driver.\"\nexit 9")
    gpus, reason = hardware.query_nvidia_smi(str(script))
    assert gpus == []
    assert "exit 9" in reason and "couldn't communicate" in reason


@pytest.mark.parametrize("body, words, timeout", [  # the ones that answer get time for a loaded machine
    ("exec sleep 600", "did not answer", 0.3),
    ("echo '<nvidia_smi_log><gpu>'", "not valid XML", 120),
    ("echo '<nvidia_smi_log/>'", "no GPU", 120),
])
def test_query_never_raises_for_no_gpu(tmp_path, body, words, timeout):
    gpus, reason = hardware.query_nvidia_smi(str(fake_nvidia_smi(tmp_path, body)), timeout=timeout)
    assert gpus == [] and words in reason


def test_query_with_a_binary_that_cannot_run(tmp_path):
    gpus, reason = hardware.query_nvidia_smi(str(tmp_path / "missing-nvidia-smi"))
    assert gpus == [] and "could not be run" in reason


@pytest.fixture(scope="module")
def providers() -> ProviderReport:
    return hardware.onnxruntime_providers()


def test_cpu_loads_and_cuda_is_at_most_installed_on_this_cpu_only_machine(providers):
    assert CPU in providers.installed and providers.loadable[-1] == CPU
    if hardware.query_nvidia_smi()[0]:
        pytest.skip("this machine has an NVIDIA GPU")
    assert CUDA not in providers.loadable and TENSORRT not in providers.loadable
    assert set(providers.errors) == {CUDA, TENSORRT}
    assert all(reason.strip() for reason in providers.errors.values())


def test_probing_keeps_onnxruntimes_complaints_off_the_terminal(capfd):
    hardware.onnxruntime_providers()
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_reason_is_one_readable_line():
    log = ("\x1b[1;31m2026-01-01 [E:onnxruntime:Default, provider_bridge_ort.cc:2458 operator()] "
           "/onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:2043 onnxruntime::Provider& "
           "onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library "
           "/venv/lib/onnxruntime/capi/libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: cannot open "
           "shared object file: No such file or directory\n\x1b[m\n")
    assert hardware._reason(log, None) == ("Failed to load library libonnxruntime_providers_cuda.so with error: "
                                           "libcublasLt.so.12: cannot open shared object file: No such file or "
                                           "directory")
    assert hardware._reason("", None) == f"ONNX Runtime fell back to {CPU}"


CPU_ONLY = ProviderReport("1.20.0", (TENSORRT, CUDA, CPU), (CPU,),
                          {TENSORRT: "Failed to load library", CUDA: "Failed to load library"})
WITH_CUDA = ProviderReport("1.20.0", (TENSORRT, CUDA, CPU), (CUDA, CPU), {TENSORRT: "Failed to load library"})
PLAIN_ORT = ProviderReport("1.20.0", (CPU,), (CPU,),
                           {TENSORRT: "not in this ONNX Runtime build", CUDA: "not in this ONNX Runtime build"})


def test_report_without_gpu_says_so_plainly():
    findings = hardware.report([], "nvidia-smi not found on PATH", CPU_ONLY)
    json.dumps(findings)
    assert findings["gpus"] == [] and findings["best_device"] is None
    assert findings["nvidia_smi"] == {"status": "unavailable", "reason": "nvidia-smi not found on PATH"}
    assert findings["providers"]["loadable"] == [CPU]
    assert findings["advice"] == "no NVIDIA GPU found: ffb runs on CPU (execution_providers = cpu)"
    text = hardware.render_text(findings)
    assert "none: nvidia-smi not found on PATH" in text
    assert "best device: none" in text
    assert f"{CUDA} does not load: Failed to load library" in text
    assert text.endswith("advice: no NVIDIA GPU found: ffb runs on CPU (execution_providers = cpu)\n")


def test_report_with_gpus_and_cuda_advises_the_best_device():
    gpus = hardware.parse_nvidia_smi_xml(TWO_A6000.read_text())
    findings = hardware.report(gpus, None, WITH_CUDA)
    json.dumps(findings)
    assert findings["best_device"] == 1
    assert findings["gpus"][1]["utilisation_percent"] is None
    assert findings["advice"] == ("use --execution-providers 'cuda cpu' --executor processes --execution-device-ids "
                                  "0 1 (worker processes on every GPU; one GPU only: --execution-device-ids 1)")
    assert any("CUDA_DEVICE_ORDER=PCI_BUS_ID" in note for note in findings["notes"])
    text = hardware.render_text(findings)
    assert "driver 535.161.07, CUDA 12.2" in text
    assert "[1] NVIDIA RTX A6000: 48560 of 49140 MiB free, utilisation ?, 36 C, 21.47 W" in text
    assert "best device: 1" in text


def test_the_advice_for_several_gpus_is_a_command_line_ffb_takes(capsys):
    """detect-gpus' advice for two GPUs, run as given (FaceFusion's --execution-device-ids spelling), resolves to
    worker processes over both GPUs."""
    import shlex

    from facefusion_batch.cli import main

    advice = hardware.report(hardware.parse_nvidia_smi_xml(TWO_A6000.read_text()), None, WITH_CUDA)["advice"]
    args = shlex.split(advice.removeprefix("use ").split(" (")[0])
    assert main(["run", *args, "--print-settings", "--json"]) == 0
    rows = {row["key"]: row["value"] for row in json.loads(capsys.readouterr().out)}
    assert (rows["execution_device_ids"], rows["executor"], rows["execution_providers"]) == ("0 1", "processes",
                                                                                            "cuda cpu")


def test_one_gpu_is_advised_without_worker_processes():
    gpus = hardware.parse_nvidia_smi_xml(TWO_A6000.read_text())[1:]
    assert hardware.report(gpus, None, WITH_CUDA)["advice"] == "use --execution-providers 'cuda cpu' --execution-device-ids 1"


@pytest.mark.parametrize("providers, words", [
    (CPU_ONLY, "CUDA provider does not load"),
    (PLAIN_ORT, "pip install onnxruntime-gpu"),
])
def test_report_with_gpu_but_no_cuda_explains_and_falls_back_to_cpu(providers, words):
    gpus = hardware.parse_nvidia_smi_xml(H100.read_text())
    advice = hardware.report(gpus, None, providers)["advice"]
    assert words in advice and advice.endswith("ffb runs on CPU (execution_providers = cpu)")


def test_report_with_cuda_but_no_nvidia_smi_still_advises_cuda():
    advice = hardware.report([], "nvidia-smi not found on PATH", WITH_CUDA)["advice"]
    assert advice.startswith("nvidia-smi is unavailable but CUDA loads: use --execution-providers 'cuda cpu'")


def test_cli_detect_gpus_without_gpu_exits_zero(capsys, monkeypatch, tmp_path):
    import json

    from facefusion_batch.cli import main

    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi anywhere
    assert main(["detect-gpus", "--json"]) == 0
    findings = json.loads(capsys.readouterr().out)
    assert findings["gpus"] == [] and findings["best_device"] is None
    assert "CPUExecutionProvider" in findings["providers"]["loadable"]
    assert main(["detect-gpus"]) == 0
    assert "no NVIDIA GPU found" in capsys.readouterr().out
