"""Typed errors. Their text is the message a user sees; the CLI turns them into one stderr line."""
from __future__ import annotations


class FfbError(Exception):
    """Base of every error ffb reports to a user. `exit_code` is the process exit status."""

    exit_code = 1


class SettingsError(FfbError):
    """A bad flag, profile key, value or environment variable."""

    exit_code = 2


class ModelError(FfbError):
    """A model file is missing, corrupt or can't be loaded."""

    exit_code = 3


class DownloadError(FfbError):
    """A model download failed or its checksum did not match."""

    exit_code = 3


class SourceError(FfbError):
    """The source face image can't be used (unreadable, no face)."""

    exit_code = 4


class TargetError(FfbError):
    """One target can't be processed; the batch records it and goes on."""


class NoSpace(TargetError):
    """A disk has too little room for a target (`disk`: "output" or "temp"); not the target's fault."""

    def __init__(self, message: str, disk: str) -> None:
        super().__init__(message)
        self.disk = disk


class MediaError(TargetError):
    """ffmpeg failed or the media is unreadable."""


class OutputError(FfbError):
    """The output location can't be written."""

    exit_code = 5


class OutputFull(OutputError):
    """The disk of the outputs (and of the journal beside them) is full: no target can finish there until
    space is freed. A target it stops is not the target's failure: the next run does it."""
