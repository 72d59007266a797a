"""The invisible watermark in every swapped frame: a spread-spectrum pattern carrying a 32-bit payload.

Design (see docs/provenance.md for the comparison with the DWT-DCT family):
- One square tile of band-limited noise (periods 6.4..43 px at the reference size) is repeated over the whole
  frame and added to the luma (the same value to B, G and R), 1.6 grey levels RMS (PSNR ~44 dB). A wide band
  reads better than a strong mark: once the mark is most of what a flat area holds, the sync peak's z is
  capped by how many spectral bins the patterns share (a band of 1.5..7 cycles read worse at any strength).
  The first version (ss1: 3..14 cycles, 1.8 RMS) read worse after every change and showed as a coarser mottle.
- The tile is a known sync pattern plus one pattern per payload bit (+/-), 32 payload bits and 12 check bits
  (a hash of the payload). The patterns come from a fixed public seed: anyone with ffb can read the mark.
- Reading: the luma's fine detail, each pixel weighted by the inverse of its local detail power (textured
  areas drown the mark, flat ones carry it), is resampled so a candidate period becomes the reference one
  (common resizes first, then the periods the autocorrelation shows; a scaled copy has a scaled period) and
  folded onto one tile (every tile adds up: a crop only moves the start). The folded tile's spectrum is
  divided by its own smoothed power (a matched filter against the picture's coloured noise); the sync
  pattern's highest correlation peaks give candidate offsets, and at each the bits are read and decoded
  (soft decisions, the cheapest words with up to three uncertain bits flipped, until the check bits match).
  A mark counts as found when the check bits match and the decoded word's bits together stand out
  (bits z >= BITS_Z; on a real mark about twice the sync's own z, on unmarked pictures below ~3.5) at a sync
  peak of at least SYNC_MIN. A video is read from the mean of frames sampled through it. Pictures smaller
  than ~250 px hold too few tiles to read.
- Embedding adds a pattern prepared once per frame size with two saturating uint8 passes in place (~0.2 ms
  CPU per 720p frame).
"""
from __future__ import annotations

import hashlib
import itertools
import threading
from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np

TILE = 128  # reference tile side in pixels (a 720p frame's)
BAND = (3.0, 20.0)  # cycles per tile the patterns use: periods ~6.4..43 px at the reference size
PAYLOAD_BITS = 32
CHECK_BITS = 12
BITS = PAYLOAD_BITS + CHECK_BITS
STRENGTH = 1.0  # RMS of the mark in grey levels (docs/provenance.md: what reads it at 1.0, and what may not)
SYNC_SHARE = 0.25  # of the mark's energy, in the sync pattern
SYNC_MIN = 4.5  # a sync peak is decoded from this height, in standard deviations of its correlation surface
PEAKS = 3  # the highest sync peaks decoded per candidate period
BITS_Z = 6.0  # the decoded word's bits together must stand out this far above what no mark gives
# Soft decoding: the hard bits, then the cheapest words with up to three of the FLIP_AMONG least certain bits
# flipped, LIST words in all: the check bits then accept a wrong word with odds LIST / 4096, and only where
# the sync and the bits stand out as unmarked pictures' do not.
FLIP_AMONG = 12
LIST = 56
SEED = 0x46464232  # "FFB2": public, fixed; changing it makes earlier marks unreadable
ALGORITHM = "org.ffb.watermark.ss2"  # the name the C2PA soft-binding assertion gives the method (ss1: the
# first band and strength, whose marks this reader does not read)


def payload_of(text: str) -> int:
    """The 32-bit payload for an output's identity (its resume key: target content, settings, output path)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def payload_hex(payload: int) -> str:
    return f"{payload:08x}"


def _check(payload: int) -> int:
    digest = hashlib.sha256(b"ffb-wm-check" + payload.to_bytes(4, "big")).digest()
    return int.from_bytes(digest[:2], "big") >> (16 - CHECK_BITS)


def bits_of(payload: int) -> np.ndarray:
    """Payload then check bits as +1/-1 (float32)."""
    word = (payload << CHECK_BITS) | _check(payload)
    bits = [(word >> (BITS - 1 - i)) & 1 for i in range(BITS)]
    return np.array(bits, np.float32) * 2 - 1


def _band_mask() -> np.ndarray:
    """The rfft2 bins of a tile the patterns use."""
    fy = np.fft.fftfreq(TILE)[:, None] * TILE
    fx = np.fft.rfftfreq(TILE)[None, :] * TILE
    radius = np.hypot(fy, fx)
    return (radius >= BAND[0]) & (radius <= BAND[1])


def _full_band() -> np.ndarray:
    """The fft2 bins of a tile the patterns use."""
    f = np.fft.fftfreq(TILE) * TILE
    radius = np.hypot(f[:, None], f[None, :])
    return (radius >= BAND[0]) & (radius <= BAND[1])


def _band_noise(rng: np.random.Generator) -> np.ndarray:
    spectrum = np.fft.rfft2(rng.standard_normal((TILE, TILE)))
    spectrum[~_band_mask()] = 0
    pattern = np.fft.irfft2(spectrum, (TILE, TILE))
    pattern -= pattern.mean()
    return (pattern / pattern.std()).astype(np.float32)


_FLIPS = [flips for n in range(4) for flips in itertools.combinations(range(FLIP_AMONG), n)]
_FLIP_MATRIX = np.array([[k in flips for k in range(FLIP_AMONG)] for flips in _FLIPS], np.float64)


@dataclass(frozen=True)
class _Patterns:
    sync: np.ndarray  # (TILE, TILE), unit RMS
    bits: np.ndarray  # (BITS, TILE, TILE), unit RMS each


_patterns: _Patterns | None = None
_lock = threading.Lock()


def patterns() -> _Patterns:
    global _patterns
    with _lock:
        if _patterns is None:
            rng = np.random.default_rng(SEED)
            sync = _band_noise(rng)
            _patterns = _Patterns(sync, np.stack([_band_noise(rng) for _ in range(BITS)]))
        return _patterns


def tile_of(payload: int) -> np.ndarray:
    """The reference tile (float32, RMS ~STRENGTH) for a payload."""
    p = patterns()
    data = np.tensordot(bits_of(payload), p.bits, axes=1) / np.sqrt(BITS)
    data /= max(float(data.std()), 1e-6)
    tile = np.sqrt(SYNC_SHARE) * p.sync + np.sqrt(1 - SYNC_SHARE) * data
    return (tile * (STRENGTH / tile.std())).astype(np.float32)


def period_for(height: int, width: int) -> int:
    """The tile period in pixels for a frame size: the reference at 720p and below, growing with the frame
    so the pattern keeps its size relative to the picture (and survives scaling down)."""
    return max(TILE, round(TILE * min(height, width) / 720))


def period_tile(payload: int, height: int, width: int) -> np.ndarray:
    """One period of the mark for a frame size, rounded to whole grey levels (int16)."""
    tile = tile_of(payload)
    period = period_for(height, width)
    if period != TILE:
        tile = _resize_periodic(tile, period)
    return np.rint(tile).astype(np.int16)


def frame_delta(payload: int, height: int, width: int) -> np.ndarray:
    """The mark for a whole frame: the tile at the frame's period, repeated, rounded to whole grey levels."""
    return _repeated(period_tile(payload, height, width), height, width)


def _repeated(tile: np.ndarray, height: int, width: int) -> np.ndarray:
    """`tile` repeated over a `height` x `width` picture (its channels, if any, as they are)."""
    reps = (-(-height // tile.shape[0]), -(-width // tile.shape[1])) + (1,) * (tile.ndim - 2)
    return np.tile(tile, reps)[:height, :width]


def _signed_planes(delta: np.ndarray, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """(what to add, what to subtract) of a mark as uint8, repeated over `channels` (0: a grey picture)."""
    up, down = np.clip(delta, 0, 255).astype(np.uint8), np.clip(-delta, 0, 255).astype(np.uint8)
    if channels:
        up, down = (np.repeat(p[:, :, None], channels, axis=2) for p in (up, down))
    return up, down


def _resize_periodic(tile: np.ndarray, size: int) -> np.ndarray:
    """Resize a periodic tile exactly (Fourier zero-padding keeps it periodic and band-limited)."""
    spectrum = np.fft.fftshift(np.fft.fft2(tile))
    pad = (size - TILE) // 2
    big = np.zeros((size, size), complex)
    big[pad:pad + TILE, pad:pad + TILE] = spectrum
    out = np.fft.ifft2(np.fft.ifftshift(big)).real * (size / TILE) ** 2
    return out.astype(np.float32)


class Watermarker:
    """Adds one output's mark to frames; the pattern is built once per frame size. Thread-safe."""

    def __init__(self, payload: int) -> None:
        self.payload = payload
        self._planes: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._lock = threading.Lock()

    @property
    def hex(self) -> str:
        return payload_hex(self.payload)

    def _planes_for(self, height: int, width: int, channels: int) -> tuple[np.ndarray, np.ndarray]:
        """(what to add, what to subtract) as uint8 planes of the frame's shape: two saturating passes."""
        key = (height, width, channels)
        planes = self._planes.get(key)
        if planes is None:
            with self._lock:
                planes = self._planes.get(key)
                if planes is None:
                    # Made at the tile's size and repeated as uint8 (the frame-sized float work cost more than a
                    # short video's marking)
                    tile = period_tile(self.payload, height, width)
                    planes = tuple(np.ascontiguousarray(_repeated(plane, height, width))
                                   for plane in _signed_planes(tile, channels))
                    self._planes[key] = planes
        return planes

    def mark(self, frame: np.ndarray) -> np.ndarray:
        """The frame with the mark added, in place when it is writable (colour channels only; an alpha channel
        is left as it is)."""
        import cv2

        if frame.dtype != np.uint8:
            return frame
        height, width = frame.shape[:2]
        if frame.ndim == 3 and frame.shape[2] == 4:
            colour = np.ascontiguousarray(frame[:, :, :3])
            out = frame.copy()
            out[:, :, :3] = self.mark(colour)
            return out
        channels = frame.shape[2] if frame.ndim == 3 else 0
        up, down = self._planes_for(height, width, channels)
        if not (frame.flags.writeable and frame.flags.c_contiguous):
            return cv2.subtract(cv2.add(frame, up), down)
        cv2.add(frame, up, dst=frame)  # in place: no new frame-sized buffers (half the cost)
        return cv2.subtract(frame, down, dst=frame)


# ---------------------------------------------------------------------------------------------------- reading

@dataclass(frozen=True)
class Reading:
    """What reading a picture found: `found` with its payload, else the best scores seen. `sync_z`: how far the
    sync pattern's correlation peak stands out (standard deviations); `bits_z`: how far the decoded word's
    bits stand out together, against what the same decoding gives on a picture without a mark."""

    found: bool
    payload: int | None = None
    sync_z: float = 0.0
    bits_z: float = 0.0
    period: float = 0.0

    @property
    def hex(self) -> str:
        return payload_hex(self.payload) if self.payload is not None else ""


def luma(frame: np.ndarray) -> np.ndarray:
    """Luma (BT.601 weights on BGR) as float32; a grey picture as it is."""
    if frame.ndim == 2:
        return frame.astype(np.float32)
    bgr = frame[:, :, :3].astype(np.float32)
    return bgr[:, :, 0] * 0.114 + bgr[:, :, 1] * 0.587 + bgr[:, :, 2] * 0.299


# The reader's high-pass and local-level scale in the copy's pixels, and the grey levels squared added to the
# local detail power, for a period of at least SMALL_PERIOD and for a smaller one (a copy scaled down, whose
# mark is finer and whose encoder left less of it)
READ_SIGMA, READ_FLOOR = 1.5, 1.0
SMALL_PERIOD, SMALL_SIGMA, SMALL_FLOOR = 0.8 * TILE, 1.0, 2.0


def _highpass(gray: np.ndarray, sigma: float = READ_SIGMA, floor: float = READ_FLOOR) -> np.ndarray:
    """The picture's fine detail, each pixel weighted by the inverse of the local detail power: the matched
    filter for a mark of even strength under noise (the picture) whose power varies from place to place, so
    flat areas, where the mark is most of what is there, count most."""
    import cv2

    residual = gray - cv2.GaussianBlur(gray, (0, 0), sigma)
    level = cv2.GaussianBlur(residual * residual, (0, 0), sigma)
    return residual / (level + floor)


def _autocorrelation_periods(hp: np.ndarray) -> list[float]:
    """Candidate tile periods: peaks of the whitened autocorrelation along each axis (a repeated tile puts
    sharp lines in the spectrum that stand above its smoothed level), refined to sub-pixel by using the
    farthest multiple that still shows; two per axis."""
    import cv2

    power = np.abs(np.fft.rfft2(hp, s=(hp.shape[0] * 2, hp.shape[1] * 2))) ** 2
    smooth = cv2.blur(power.astype(np.float32), (9, 9), borderType=cv2.BORDER_REFLECT)
    ac = np.fft.irfft2(power / (smooth + 1e-9))
    return _peaks(ac[:hp.shape[0], 0]) + _peaks(ac[0, :hp.shape[1]])


def _peaks(line: np.ndarray) -> list[float]:
    size = len(line)
    low, high = 40, int(size * 0.55)
    if high <= low + 2:
        return []
    line = line - np.median(line[low:high])
    order = np.argsort(line[low:high])[::-1]
    candidates: list[float] = []
    for index in order[:40]:
        lag = low + int(index)
        if not (line[lag] >= line[lag - 1] and line[lag] >= line[lag + 1]):
            continue
        if any(abs(lag - c) < 6 for c in candidates):
            continue
        candidates.append(float(lag))
        if len(candidates) == 2:
            break
    refined = []
    for lag in candidates:
        best = _parabolic(line, int(lag))
        multiple = 2
        while multiple * best + 4 < size * 0.9:
            at = int(round(multiple * best))
            near = at - 3 + int(np.argmax(line[at - 3:at + 4]))
            if line[near] < 0.3 * line[int(lag)] or line[near] <= 0:
                break
            best = _parabolic(line, near) / multiple
            multiple += 1
        refined.append(best)
    return refined


def _parabolic(line: np.ndarray, at: int) -> float:
    if at <= 0 or at >= len(line) - 1:
        return float(at)
    a, b, c = line[at - 1], line[at], line[at + 1]
    denom = a - 2 * b + c
    return float(at + (0.5 * (a - c) / denom if denom != 0 else 0.0))


def _fold(hp: np.ndarray, period_y: float, period_x: float) -> np.ndarray:
    """Resample the high-passed picture so the period is TILE, and add all tiles onto one."""
    import cv2

    height, width = hp.shape
    new = (max(TILE, round(width * TILE / period_x)), max(TILE, round(height * TILE / period_y)))
    scaled = cv2.resize(hp, new, interpolation=cv2.INTER_LINEAR if period_x < TILE else cv2.INTER_AREA)
    ny, nx = -(-scaled.shape[0] // TILE), -(-scaled.shape[1] // TILE)
    padded = np.zeros((ny * TILE, nx * TILE), np.float32)
    padded[:scaled.shape[0], :scaled.shape[1]] = scaled
    return padded.reshape(ny, TILE, nx, TILE).sum(axis=(0, 2))


def _peaks_of(surface: np.ndarray, count: int) -> list[tuple[int, int]]:
    """The `count` highest local maxima of a circular surface, at least 4 px apart."""
    import cv2

    wrapped = np.pad(surface, 2, mode="wrap")
    local = cv2.dilate(wrapped, np.ones((5, 5), np.uint8))[2:-2, 2:-2]
    ys, xs = np.nonzero(surface >= local)
    order = np.argsort(surface[ys, xs])[::-1][:count]
    return [(int(ys[i]), int(xs[i])) for i in order]


@dataclass(frozen=True)
class _Spectra:
    sync: np.ndarray  # conj(fft2) of the sync pattern
    bits_power: np.ndarray  # |fft2|^2 of each bit pattern in the band, (BITS, band bins)
    band: np.ndarray  # the band's bins (bool, TILE x TILE)


_spectra: _Spectra | None = None


def _pattern_spectra() -> _Spectra:
    global _spectra
    p, band = patterns(), _full_band()
    with _lock:
        if _spectra is None:
            bits = np.fft.fft2(p.bits)
            _spectra = _Spectra(np.conj(np.fft.fft2(p.sync)), np.abs(bits[:, band]) ** 2, band)
        return _spectra


# Under no mark, each bit's z is a standard normal and decoding takes its sign: the decoded word's sum of
# bit z's is then a sum of BITS half-normals (mean and spread below); a mark adds BITS x its per-bit SNR.
_NULL_MEAN = BITS * np.sqrt(2 / np.pi)
_NULL_SPREAD = np.sqrt(BITS * (1 - 2 / np.pi))


def _decode(folded: np.ndarray) -> list[tuple[float, int | None, float]]:
    """(sync z, payload or None, bits z) at each of the sync correlation's highest peaks in one folded tile."""
    spectra = _pattern_spectra()
    spectrum = np.fft.fft2(folded)
    spectrum = np.where(spectra.band, spectrum / (_level(spectrum) ** 2 + 1e-9), 0)  # matched: / noise power
    correlation = np.fft.ifft2(spectrum * spectra.sync).real
    mean, spread = correlation.mean(), correlation.std() + 1e-12
    # each bit pattern's correlation spread over all offsets, from its spectrum (Parseval). Products here are
    # elementwise, not BLAS: its threads cost more than these small sums on a busy machine
    bit_spread = np.sqrt((spectra.bits_power * np.abs(spectrum[spectra.band]) ** 2).sum(axis=1)) / folded.size + 1e-12
    whitened = np.fft.ifft2(spectrum).real.astype(np.float32)
    bits = patterns().bits.reshape(BITS, -1)
    found = []
    for dy, dx in _peaks_of(correlation, PEAKS):
        z = float((correlation[dy, dx] - mean) / spread)
        aligned = np.roll(whitened, (-dy, -dx), axis=(0, 1))
        soft = (bits * aligned.reshape(-1)).sum(axis=1, dtype=np.float64) / bit_spread
        payload, word = _word(soft)
        bits_z = float((np.dot(word, soft) - _NULL_MEAN) / _NULL_SPREAD) if word is not None else 0.0
        found.append((z, payload, bits_z))
    return found


def _word(soft: np.ndarray) -> tuple[int | None, np.ndarray | None]:
    """The payload whose word (check bits included) is nearest to the soft bits: the hard decision, then the
    LIST cheapest words with up to three of the FLIP_AMONG least certain bits flipped (cheapest: the least
    certainty given up); (None, None) when none has matching check bits."""
    hard = 0
    for bit in soft > 0:
        hard = (hard << 1) | int(bit)
    weakest = np.argsort(np.abs(soft))[:FLIP_AMONG]
    costs = (_FLIP_MATRIX * np.abs(soft[weakest])).sum(axis=1)
    for index in np.argsort(costs, kind="stable")[:LIST]:
        word = hard
        for k in _FLIPS[index]:
            word ^= 1 << (BITS - 1 - int(weakest[k]))
        payload, check = word >> CHECK_BITS, word & ((1 << CHECK_BITS) - 1)
        if check == _check(payload):
            return payload, bits_of(payload)
    return None, None


def _level(spectrum: np.ndarray) -> np.ndarray:
    """The local level of a full 2-D spectrum (RMS over neighbouring bins): the picture's own smooth
    spectrum, which the mark's flat band barely changes."""
    import cv2

    power = np.fft.fftshift(np.abs(spectrum) ** 2).astype(np.float32)
    return np.sqrt(np.fft.ifftshift(cv2.blur(power, (9, 9), borderType=cv2.BORDER_REFLECT)))


# Scale factors tried besides the autocorrelation's candidates: common resizes of a 720p/1080p/4K output.
_SCALES = (1.0, 0.5, 0.75, 2 / 3, 1.5, 2.0, 1 / 3, 0.25, 4 / 3, 0.8, 0.9, 1.25, 0.5625, 3.0)
FINE_Z = 4.0  # a candidate period is searched finely only when its sync already shows
_FINE = (-0.012, -0.009, -0.006, -0.003, 0.003, 0.006, 0.009, 0.012)  # relative steps around a candidate


def _candidate_periods(hp: np.ndarray) -> Iterator[float]:
    """Tile periods worth trying, most likely first, none within 1 % of another: common resizes first, then
    (computed only when those fail) the autocorrelation's candidates."""
    height, width = hp.shape
    seen: list[float] = []

    def fresh(period: float) -> bool:
        if period < 24 or min(height, width) < period * 1.5 or any(abs(period - q) / q <= 0.01 for q in seen):
            return False
        seen.append(period)
        return True

    for period in [TILE * s for s in _SCALES] + [float(period_for(height, width))]:
        if fresh(period):
            yield period
    for found in _autocorrelation_periods(hp):
        for period in (found, found / 2):
            if fresh(period):
                yield period


def read_gray(gray: np.ndarray) -> Reading:
    """Look for a mark in a luma picture (float32): each candidate period is tried, the strongest few
    searched finely (the fold needs the period to ~0.3 %), and the first decode whose sync and bits both
    stand out and whose check bits match is the mark."""
    if min(gray.shape) < 64:
        return Reading(False)
    hp = _highpass(gray)
    small: list[np.ndarray] = []  # the high pass for small periods, made when one is tried
    best = Reading(False)
    scores = []

    def attempt(period: float) -> Reading | None:
        nonlocal best
        top = 0.0
        if period < SMALL_PERIOD and not small:
            small.append(_highpass(gray, SMALL_SIGMA, SMALL_FLOOR))
        for z, payload, bits_z in _decode(_fold(small[0] if period < SMALL_PERIOD else hp, period, period)):
            top = max(top, z)
            if payload is not None and z >= SYNC_MIN and bits_z >= BITS_Z:
                return Reading(True, payload, z, bits_z, period)
            if (z, bits_z) > (best.sync_z, best.bits_z):
                best = Reading(False, sync_z=z, bits_z=bits_z, period=period)
        scores.append((top, period))
        return None

    for period in _candidate_periods(hp):
        if (reading := attempt(period)) is not None:
            return reading
    for z0, period in sorted(scores, reverse=True)[:3]:
        if z0 < FINE_Z:  # nothing there: an unmarked picture ends here
            break
        for step in _FINE:
            if (reading := attempt(period * (1 + step))) is not None:
                return reading
    return best


def read_frames(frames: Iterable[np.ndarray]) -> Reading:
    """Read the mark from a picture, or from the mean luma of several frames of one video (a mark that is
    the same in every frame adds up; moving content and coding noise average out)."""
    total, count = None, 0
    for frame in frames:
        gray = luma(frame)
        if total is not None and gray.shape != total.shape:
            continue
        total = gray.copy() if total is None else total + gray
        count += 1
    if total is None:
        return Reading(False)
    return read_gray(total / count)
