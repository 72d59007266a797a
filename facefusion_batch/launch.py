"""The `ffb` command's entry point: the signal handlers go in before anything heavy is imported, so a SIGTERM
or Ctrl-C at any moment of start-up ends the command with 130 like one during the run (see `interrupts`)."""
from __future__ import annotations

import atexit
import os
import sys

from facefusion_batch import interrupts

INTERRUPTED = 130


def entry() -> None:
    signals = interrupts.install()
    try:
        from facefusion_batch.cli import main

        code = main()
    except KeyboardInterrupt:  # before main() could handle it: while importing the CLI
        print("ffb: interrupted", file=sys.stderr)
        code = INTERRUPTED
    interrupts.ignore()
    if code == INTERRUPTED or signals.signalled:  # `ffb watch` stopped by SIGTERM exits 0
        _leave(code)
    sys.exit(code)


def _leave(code: int) -> None:
    """Exit with `code` after an interruption ffb handled. CPython remembers a KeyboardInterrupt that went
    through Python code a C extension ran (PyRun_*), even one caught afterwards, and at exit kills the
    process with SIGINT instead of returning the status (-2, not 130). ffb's own clean-up is done by now:
    the library exit handlers run, the output is flushed, and the process leaves with its status."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code)
