"""Inaudible, robust 64-bit watermark for audio. Pure numpy/SciPy, deterministic (fixed key).

Design
------
* Payload: the 64-bit id plus CRC-24, convolutionally coded (282 coded bits, ``media_codecs.ecc``),
  preceded by ``PILOT_SYMBOLS`` known pilot bits.
* Carrier: the log energies of 64 ms x 125 Hz cells (``spectrum.py``) of the channel mix,
  resampled to 8 kHz. Each symbol owns ``PAIRS`` pairs of cells (``layout.py``); it is written by
  quantising the sum of its pair differences with per-cell gains (``embedding.py``), so the mark
  has the host's spectral and temporal shape and the mark-to-signal ratio stays under -35 dB.
* Strength: the lattice step is one of ``STEPS`` (four steps, 2 dB apart in mark energy); the
  embedder takes the largest step whose mark fits the 35.3 dB budget, so material that leaves
  headroom under a small step spends it. Where even the smallest step does not fit (tonal
  material with few strong cells), the mark is planned to the budget: cheap symbol copies are
  moved all the way, dear ones part of the way (distortion compensation), measured and planned
  again until it fits. The reader tries every step; the pilot picks it.
* A second carrier, the broadband energy envelope (``envelope.py``): the whole signal is scaled by a
  gain per 32-ms slot so that the log-energy difference of consecutive slots of the channel mix, at
  the recording's own rate, sits on its bit's lattice. It goes wherever the signal's energy is (a
  sweep or tone above the cells' band), and takes a share of the SNR budget only when much of the
  energy lies outside the cells' band (``envelope.share_for``): speech and most music leave it all to
  the cells. The cells are planned on the mix as the envelope scales it, within what it left.
* The layout repeats every ``PERIOD_SLOTS`` slots (8.4 s): any 8.5 s of the recording hold every
  symbol once. Reading (``reading.py``) searches the sync with the pilot, at the original speed
  and then over a +-2.5% grid (scored coarsely first), reads at most three windows of 25.6 s, and
  accepts an id only if the pilot is significant, the CRC matches and the soft values agree with
  the codeword:
  otherwise ``None``, never a wrong id. Between the two, the envelope is read (same acceptance).
  Marks made before the envelope existed read as before: the cells are unchanged.

Minimum length: ``embed`` needs ``MIN_EMBED_SECONDS`` (9 s); ``extract`` returns None on less
than one period of audio.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from media_codecs import ecc
from media_codecs.audio import spectrum as sp
from media_codecs.audio.watermark import envelope, reading
from media_codecs.audio.watermark.embedding import CELL_ENERGY_PER_SAMPLE_ENERGY, mark_signal
from media_codecs.audio.watermark.layout import STEPS, layout
from media_codecs.ecc import MARK_BITS

MIN_EMBED_SECONDS = 9.0
MAX_CHANNELS = 8
MIN_RATE, MAX_RATE = 8000, 192000
_TARGET_SNR_DB = 35.3  # the mark is scaled down if it would exceed signal / 10^(35.3/10)
_TARGET_BUDGET = 10 ** (-_TARGET_SNR_DB / 10)
ENVELOPE_STEPS = envelope.steps(_TARGET_BUDGET)
_BUDGET_ROUNDS = 3  # plans of the mark to a budget, each corrected by the last one's measure


class WatermarkError(Exception):
    """The audio cannot carry the mark (bad shape, rate or id)."""


class AudioTooShort(WatermarkError):
    """The audio is shorter than ``MIN_EMBED_SECONDS``."""


# ---------------------------------------------------------------- embedding


def embed(samples: np.ndarray, sample_rate: int, mark_id: int) -> np.ndarray:
    """Return ``samples`` (float in [-1, 1], shape (n,) or (n, channels)) carrying ``mark_id``.

    The same mark goes into every channel; the result keeps the shape and stays in [-1, 1].
    Raises AudioTooShort under ``MIN_EMBED_SECONDS``, WatermarkError for a bad shape, rate or id.
    """
    x = _validated(samples, sample_rate)
    frames = x if x.ndim == 2 else x[:, None]
    mark = plan(_array_blocks(frames), sample_rate, mark_id)
    marked = np.concatenate(list(mark.add_to(np.array(block) for block in _array_blocks(frames))))
    return marked if x.ndim == 2 else marked[:, 0]


@dataclass(frozen=True)
class Mark:
    """One recording's mark at the analysis rate, scaled to the SNR budget, ready to add at full rate."""

    signal: np.ndarray  # at sp.RATE (float32: 4 bytes a sample, whatever the recording's rate)
    sample_rate: int
    frames: int
    envelope: envelope.Envelope  # the broadband carrier's gain per 32-ms slot

    def add_to(self, blocks: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
        """Each (frames, channels) float block of the recording, in order, scaled by the envelope's
        gain, with the cell mark added to every channel and clipped to [-1, 1] in place."""
        tape = _Tape(sp.resample_blocks(_array_blocks(self.signal), sp.RATE, self.sample_rate))
        at = 0
        for block in blocks:
            if len(self.envelope.log_gain):
                block *= self.envelope.gain(at, len(block), self.sample_rate)[:, None]
            block += tape.take(len(block))[:, None]
            at += len(block)
            yield np.clip(block, -1.0, 1.0, out=block)


def plan(blocks: Iterable[np.ndarray], sample_rate: int, mark_id: int) -> Mark:
    """The mark for the recording read as (frames, channels) float ``blocks`` in [-1, 1], in order.

    Only the 8 kHz channel mix and the mix's energy every 4 ms are kept, never the full-rate samples:
    one pass over the blocks. The envelope is planned first; the cells are planned on the 8 kHz mix
    as the envelope scales it, within what the envelope left of the SNR budget.
    Raises AudioTooShort under ``MIN_EMBED_SECONDS``, WatermarkError for a bad shape, rate or id.
    """
    if not MIN_RATE <= sample_rate <= MAX_RATE:
        raise WatermarkError(f"sample rate {sample_rate} outside {MIN_RATE}..{MAX_RATE} Hz")
    if not 0 <= mark_id < 1 << MARK_BITS:
        raise WatermarkError("mark_id must be an unsigned 64-bit integer")
    summary = _Summary(envelope.EnergyGrid(sample_rate))
    analysis = np.concatenate([np.zeros(0, dtype=np.float32), *(
        piece.astype(np.float32) for piece in sp.resample_blocks(map(summary.add, blocks), sample_rate, sp.RATE))])
    if summary.frames < MIN_EMBED_SECONDS * sample_rate:
        raise AudioTooShort(f"need at least {MIN_EMBED_SECONDS} s of audio, got {summary.frames / sample_rate:.2f} s")
    bits = np.concatenate([layout().pilot, ecc.conv_encode(ecc.payload_bits(mark_id))])
    gains = envelope.plan(summary.grid, bits, _envelope_step(analysis, summary, sample_rate))
    for start in range(0, len(analysis) if len(gains.log_gain) else 0, 1 << 16):  # the cells see it scaled
        piece = analysis[start : start + (1 << 16)]
        piece *= gains.gain(start, len(piece), sp.RATE).astype(np.float32)
    return Mark(_fitted_mark(analysis, bits, summary, sample_rate, gains.energy), sample_rate, summary.frames, gains)


def _envelope_step(analysis: np.ndarray, summary: _Summary, sample_rate: int) -> float:
    """The envelope's lattice step (0: none) from the share of the mix's energy the cells' band misses."""
    mix_energy = summary.grid.total
    in_band = sp.band_power_blocks(analysis).sum() / CELL_ENERGY_PER_SAMPLE_ENERGY * sample_rate / sp.RATE
    share = envelope.share_for(1.0 - in_band / (mix_energy + 1e-30))
    return float(np.sqrt(48 * share * _TARGET_BUDGET)) if share else 0.0


def _fitted_mark(analysis: np.ndarray, bits: np.ndarray, summary: _Summary, sample_rate: int,
                 spent_already: float) -> np.ndarray:
    """The 8 kHz mark of the largest step that fits the SNR budget. When the smallest step does not fit
    either (tonal material with few strong cells), the mark is planned to the budget (see
    `embedding.mark_signal`), measured, and planned again with the budget corrected by what the
    estimate missed; what still overshoots is scaled down."""
    power = summary.energy / (summary.frames * summary.channels)
    # what the envelope spent is not the cells' to spend (it keeps at least a quarter of the budget)
    left = max(_snr_budget(summary) - spent_already, 0.25 * _snr_budget(summary))

    def spent(signal: np.ndarray) -> float:
        return _full_rate_energy(signal, sample_rate, summary.frames) / (left + 1e-20)

    for step in STEPS:
        signal = None  # the previous step's mark is not kept beside the next one
        signal = mark_signal(analysis, bits, step, power)
        ratio = spent(signal)
        # the energy falls at most as the step squared: stop trying when even that cannot fit
        if ratio <= 1.0 or ratio * (STEPS[-1] / step) ** 2 > 1.0:
            break
    budget = left * sp.RATE / sample_rate * CELL_ENERGY_PER_SAMPLE_ENERGY
    for _ in range(_BUDGET_ROUNDS if ratio > 1.0 else 0):
        signal = None
        signal = mark_signal(analysis, bits, STEPS[-1], power, budget)
        ratio = spent(signal)
        if 0.9 <= ratio <= 1.0:
            break
        budget /= max(ratio, 1e-3) * 1.02
    if ratio > 1.0:
        signal *= np.float32(ratio**-0.5)
    return signal


class _Summary:
    """What the embedder needs from the full-rate samples as they stream past: their energy, their
    length, the envelope's energy grid, and the channel mix (returned for each block, checked)."""

    def __init__(self, grid: envelope.EnergyGrid) -> None:
        self.frames, self.channels, self.energy, self.grid = 0, 0, 0.0, grid

    def add(self, block: np.ndarray) -> np.ndarray:
        if block.ndim != 2 or not 1 <= block.shape[1] <= MAX_CHANNELS or block.shape[1] != (
                self.channels or block.shape[1]):
            raise WatermarkError(f"samples must be (n, 1..{MAX_CHANNELS}) blocks of one layout, got {block.shape}")
        if not np.all(np.isfinite(block)):
            raise WatermarkError("samples must be finite")
        self.frames, self.channels = self.frames + len(block), block.shape[1]
        self.energy += float(np.sum(np.square(block, dtype=np.float64)))
        mix = sp.mono_mix(block)
        self.grid.add(block, mix)
        return mix


class _Tape:
    """Pieces of a stream handed out in the sizes asked for; zeros once it runs out."""

    def __init__(self, pieces: Iterator[np.ndarray]) -> None:
        self._pieces, self._left = pieces, np.zeros(0)

    def take(self, count: int) -> np.ndarray:
        parts, have = [self._left], len(self._left)
        while have < count:
            piece = next(self._pieces, None)
            if piece is None:
                parts.append(np.zeros(count - have))
                break
            parts.append(piece)
            have += len(piece)
        joined = np.concatenate(parts)
        self._left = joined[count:]
        return joined[:count]


def _array_blocks(x: np.ndarray, size: int = 1 << 16) -> Iterator[np.ndarray]:
    return (x[start : start + size] for start in range(0, len(x), size))


def _full_rate_energy(signal: np.ndarray, sample_rate: int, frames: int) -> float:
    """Energy of the mark at the recording's rate over its ``frames`` (one channel), computed in blocks."""
    tape = _Tape(sp.resample_blocks(_array_blocks(signal), sp.RATE, sample_rate))
    return sum(float(np.sum(np.square(tape.take(min(1 << 16, frames - at)))))
               for at in range(0, frames, 1 << 16))


def _validated(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim not in (1, 2) or (x.ndim == 2 and not 1 <= x.shape[1] <= MAX_CHANNELS):
        raise WatermarkError(f"samples must be (n,) or (n, 1..{MAX_CHANNELS}), got {x.shape}")
    if not MIN_RATE <= sample_rate <= MAX_RATE:
        raise WatermarkError(f"sample rate {sample_rate} outside {MIN_RATE}..{MAX_RATE} Hz")
    if not np.all(np.isfinite(x)):
        raise WatermarkError("samples must be finite")
    return x


def _snr_budget(summary: _Summary) -> float:
    """The largest energy of the mark (one channel, at the recording's rate) within ``_TARGET_SNR_DB``."""
    return summary.energy / summary.channels * _TARGET_BUDGET


# ---------------------------------------------------------------- reading


def extract(samples: np.ndarray, sample_rate: int) -> int | None:
    """Return the 64-bit id carried by ``samples`` (as for ``embed``), or None.

    None means no valid mark was found (unmarked, too damaged, too short or unreadable input);
    a mark that fails the pilot, CRC-24 and codeword checks is never reported.
    """
    try:
        x = _validated(samples, sample_rate)
    except WatermarkError:
        return None
    mix = sp.mono_mix(x)
    analysis = sp.resample(mix, sample_rate, sp.RATE)
    # the cells at the recording's speed, then the envelope, then the cells' speed search
    found = reading.read(analysis, search_speed=False)
    if found is None:
        found = envelope.read(mix, sample_rate, ENVELOPE_STEPS)
    return found if found is not None else reading.read(analysis, search_speed=True)
