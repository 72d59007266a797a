"""A signal during start-up (imports, C-extension initialisation) ends ffb like one during the run: 130,
never a Python traceback, a -2/-15 death or an ImportError mistaken for a broken install."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from facefusion_batch import interrupts
from facefusion_batch import cli

# What pybind11 does when a KeyboardInterrupt is raised while its module initialises: the interruption is
# lost and an ImportError takes its place (seen with onnxruntime under a SIGTERM at start-up).
PYBIND_LIKE = textwrap.dedent("""
    import os, signal
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs at the next bytecodes
            pass
    except KeyboardInterrupt:
        raise ImportError("initialization failed") from None

    def set_default_logger_severity(level):
        pass
""")


def _in_subprocess(tmp_path, code: str) -> subprocess.CompletedProcess:
    """`code` run as `python -m` runs ffb (`-c` would exit by another path in CPython)."""
    fake = tmp_path / "fake"
    (fake / "onnxruntime").mkdir(parents=True)
    (fake / "onnxruntime" / "__init__.py").write_text(PYBIND_LIKE)
    (fake / "scenario.py").write_text(textwrap.dedent(code))
    path = os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "scenario"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": path}, timeout=120)


def test_a_signal_while_onnxruntime_initialises_is_an_interruption_not_an_import_error(tmp_path):
    done = _in_subprocess(tmp_path, """
        from facefusion_batch import interrupts
        from facefusion_batch.models.providers import ort
        interrupts.install()
        try:
            ort()
        except KeyboardInterrupt:
            print("interrupted")
        except ImportError as exc:
            print("import error:", exc)
    """)
    assert done.stdout.strip() == "interrupted", done.stdout + done.stderr


def test_deferred_raises_on_leaving_once_and_only_in_the_main_thread():
    with interrupts.handled() as signals:
        with pytest.raises(KeyboardInterrupt):
            with interrupts.deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(1000):
                    pass
                reached = True
        assert reached and signals.signalled
    with interrupts.handled() as signals:  # inside `held` (the summary), a deferred section raises nothing
        with signals.held():
            with interrupts.deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(1000):
                    pass
        assert signals.signalled
    errors: list[BaseException] = []

    def elsewhere() -> None:
        try:
            with interrupts.deferred():
                pass
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    with interrupts.handled():
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
    assert not errors


class _SignalInDel:
    """An object whose `__del__` is running when SIGTERM arrives (as a collected subprocess.Popen's may be)."""

    def __init__(self, ran: list[str]) -> None:
        self.ran = ran

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler runs here, inside __del__
        self.ran.append("finaliser done")


def test_a_signal_inside_a_finaliser_is_raised_after_it_not_swallowed(capsys):
    """A KeyboardInterrupt raised inside `__del__` is swallowed by Python ("Exception ignored") and the run went on
    to write its output (seen when SIGTERM met a collected subprocess.Popen): it is raised once the finaliser is
    done, exactly once, and nothing is printed."""
    ran: list[str] = []
    with interrupts.handled() as signals:
        with pytest.raises(KeyboardInterrupt):
            holder = [_SignalInDel(ran)]
            holder.clear()  # __del__ runs now
            for _ in range(3000):  # the owed KeyboardInterrupt lands here, ~10 ms on (30 s: only if it never does)
                time.sleep(0.01)
            ran.append("not interrupted")
        assert ran == ["finaliser done"] and signals.signalled and signals.signum == signal.SIGTERM
        time.sleep(0.1)  # owed once: nothing else is raised
    assert "Exception ignored" not in capsys.readouterr().err


@pytest.mark.parametrize("as_json", [False, True])
def test_an_interruption_before_any_command_handles_it_exits_130(monkeypatch, capsys, as_json):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "several_sources", interrupted)
    try:
        code = cli.main(["run", "-s", "a.png", "-t", "b.mp4"] + (["--json"] if as_json else []))
    except KeyboardInterrupt:
        pytest.fail("the KeyboardInterrupt escaped main()")
    out, err = capsys.readouterr()
    assert code == 130 and "ffb: interrupted" in err and "Traceback" not in err
    if as_json:
        line = json.loads(out)
        assert line["exit_code"] == 130 and line["ok"] is False


def test_a_signal_while_the_cli_is_imported_exits_130(tmp_path):
    """The entry point installs the handlers before importing the CLI: a SIGTERM landing in that import
    (here: at the first import of typer) gives 130, not a traceback and -2."""
    done = _in_subprocess(tmp_path, """
        import os, signal, sys

        class Trip:
            def find_spec(self, name, path=None, target=None):
                if name == "typer":
                    os.kill(os.getpid(), signal.SIGTERM)
                    for _ in range(1000):
                        pass
                return None

        sys.meta_path.insert(0, Trip())
        sys.argv = ["ffb", "--help"]
        from facefusion_batch.launch import entry
        entry()
    """)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "ffb: interrupted" in done.stderr


def test_an_interruption_that_went_through_c_extension_code_still_exits_130(tmp_path):
    """CPython flags a KeyboardInterrupt that passed through PyRun_* (C extensions run Python that way)
    and, at exit, kills the process with SIGINT (-2) even though ffb handled it. Here a C-level PyRun
    raises it where a signal would, while the CLI starts."""
    done = _in_subprocess(tmp_path, """
        import ctypes, sys
        from facefusion_batch import cli

        run = ctypes.pythonapi.PyRun_String
        run.restype, run.argtypes = ctypes.py_object, [ctypes.c_char_p, ctypes.c_int, ctypes.py_object,
                                                       ctypes.py_object]

        def tripping(args):
            run(b"raise KeyboardInterrupt", 257, {}, {})  # 257: Py_file_input

        cli.several_sources = tripping
        sys.argv = ["ffb", "run", "-s", "a.png", "-t", "b.mp4"]
        from facefusion_batch.launch import entry
        entry()
    """)
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert "ffb: interrupted" in done.stderr


def test_a_second_signal_ignored_while_the_first_is_handled_prints_no_traceback(monkeypatch):
    # A second SIGTERM tripped while the first one's handler sets both signals to SIG_IGN finds its handler
    # ignored, and CPython reports it as an unraisable OSError with a traceback: ffb says nothing of it (the
    # signal is ignored as meant). Any other unraisable error still goes to the hook there was before.
    import types

    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)

    def unraisable(error: BaseException) -> types.SimpleNamespace:
        return types.SimpleNamespace(exc_type=type(error), exc_value=error, exc_traceback=None, err_msg=None,
                                     object=None)

    with interrupts.handled():
        sys.unraisablehook(unraisable(OSError("Signal 15 ignored due to race condition")))
        assert reported == []
        sys.unraisablehook(unraisable(ValueError("something else")))
        assert [str(r.exc_value) for r in reported] == ["something else"]
    assert sys.unraisablehook == reported.append
