"""Model download: resumable (HTTP Range into a .part file), checksum-verified, renamed into place."""
from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

from facefusion_batch.errors import DownloadError
from facefusion_batch.models.catalog import ModelSpec
from facefusion_batch.models.store import crc32_of, sha256_of

Progress = Callable[[int, int | None], None]  # (bytes so far, total or None)
_BLOCK = 1 << 16


def resolve_url(url: str, mirror: str) -> str:
    """Swap the release base for a mirror that holds the same file names."""
    if not mirror:
        return url
    return mirror.rstrip("/") + "/" + url.rsplit("/", 1)[1]


def download_model(spec: ModelSpec, models_path: Path, mirror: str = "", progress: Progress | None = None,
                   timeout: float = 30.0) -> Path:
    """Fetch `spec` (and its .hash sidecar) into `models_path`; verify; return the final path."""
    models_path.mkdir(parents=True, exist_ok=True)
    target = models_path / spec.file
    expected_crc = None
    if spec.hash_url and not spec.sha256:
        sidecar = models_path / spec.hash_file
        fetch(resolve_url(spec.hash_url, mirror), sidecar, timeout=timeout, fix_dir=models_path)
        expected_crc = sidecar.read_text(encoding="ascii", errors="replace").strip().lower()
    part = target.with_name(target.name + ".part")
    fetch(resolve_url(spec.url, mirror), part, progress=progress, timeout=timeout, fix_dir=models_path,
          resume=True)
    if spec.sha256 and (actual := sha256_of(part)) != spec.sha256:
        part.unlink()
        raise DownloadError(f"{spec.file}: sha256 {actual} does not match {spec.sha256}; the download was "
                            "discarded, run the command again")
    if expected_crc and (actual := crc32_of(part)) != expected_crc:
        part.unlink()
        raise DownloadError(f"{spec.file}: CRC32 {actual} does not match {spec.hash_file} ({expected_crc}); "
                            "the download was discarded, run the command again")
    part.replace(target)
    return target


def fetch(url: str, dest: Path, *, progress: Progress | None = None, timeout: float = 30.0,
          fix_dir: Path, resume: bool = False) -> None:
    """Write `url` to `dest`; with `resume`, continue a partial `dest` with an HTTP Range request."""
    have = dest.stat().st_size if resume and dest.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    tmp = dest if resume else dest.with_name(dest.name + ".tmp")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            total = _total_size(response, have)
            mode = "ab" if have and response.status == 206 else "wb"
            done = have if mode == "ab" else 0
            with tmp.open(mode) as out:
                while block := response.read(_BLOCK):
                    out.write(block)
                    done += len(block)
                    if progress:
                        progress(done, total)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # already complete
            return
        raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}; put {dest.name.removesuffix('.part')} "
                            f"into {fix_dir} by hand") from None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DownloadError(f"{url}: can't download ({reason}); if this machine is offline, copy "
                            f"{dest.name.removesuffix('.part')} into {fix_dir} by hand") from None
    if not resume:
        tmp.replace(dest)


def _total_size(response, have: int) -> int | None:
    length = response.headers.get("Content-Length")
    if length is None:
        return None
    return int(length) + (have if response.status == 206 else 0)
