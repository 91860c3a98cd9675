"""Payload coding shared by the image and audio watermarks: a 64-bit id plus CRC-24,
convolutionally coded (K=7, rate 1/3, zero-terminated) and soft-decoded with Viterbi.

Pure numpy. ``CODED_BITS`` (282) soft values go in, an id or None comes out.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

MARK_BITS = 64
CRC_BITS = 24
_CRC_POLY, _CRC_INIT = 0x864CFB, 0xB704CE  # CRC-24/OpenPGP
_GENERATORS = (0o133, 0o171, 0o165)
_MEMORY = 6
INFO_BITS = MARK_BITS + CRC_BITS
CODED_BITS = (INFO_BITS + _MEMORY) * len(_GENERATORS)


def crc24(data: bytes) -> int:
    crc = _CRC_INIT
    for byte in data:
        crc ^= byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= _CRC_POLY
    return crc & 0xFFFFFF


def _int_to_bits(value: int, width: int) -> np.ndarray:
    return np.array([(value >> (width - 1 - i)) & 1 for i in range(width)], dtype=np.uint8)


def _bits_to_int(bits: np.ndarray) -> int:
    return int("".join(str(int(b)) for b in bits), 2)


def payload_bits(mark_id: int) -> np.ndarray:
    """The id's 64 bits followed by its CRC-24 (``INFO_BITS`` bits)."""
    crc = crc24(mark_id.to_bytes(8, "big"))
    return np.concatenate([_int_to_bits(mark_id, MARK_BITS), _int_to_bits(crc, CRC_BITS)])


def payload_id(bits: np.ndarray) -> int | None:
    """The id carried by ``INFO_BITS`` decoded bits, or None when the CRC does not match."""
    mark_id = _bits_to_int(bits[:MARK_BITS])
    crc = _bits_to_int(bits[MARK_BITS:])
    return mark_id if crc24(mark_id.to_bytes(8, "big")) == crc else None


@lru_cache(maxsize=1)
def _trellis() -> np.ndarray:
    """Output symbols (+-1) for reaching state ``s`` from predecessor high bit ``h``: [h, s, j]."""
    registers = (np.arange(2)[:, None] << _MEMORY) | np.arange(1 << _MEMORY)[None, :]
    parity = [np.array([bin(int(r) & g).count("1") & 1 for r in registers.ravel()]) for g in _GENERATORS]
    return (2.0 * np.stack(parity, axis=-1) - 1.0).reshape(2, 1 << _MEMORY, len(_GENERATORS))


def conv_encode(bits: np.ndarray) -> np.ndarray:
    """Rate-1/3 zero-terminated convolutional code of ``bits`` (0/1 array)."""
    state, out = 0, []
    for bit in np.concatenate([bits, np.zeros(_MEMORY, dtype=np.uint8)]):
        register = (state << 1) | int(bit)
        out.extend(bin(register & g).count("1") & 1 for g in _GENERATORS)
        state = register & ((1 << _MEMORY) - 1)
    return np.array(out, dtype=np.uint8)


def viterbi(soft: np.ndarray) -> np.ndarray:
    """Most likely info bits for soft values (positive means coded bit 1)."""
    symbols = _trellis()
    n_states = 1 << _MEMORY
    states = np.arange(n_states)
    predecessors = np.stack([states >> 1, (states >> 1) | (n_states >> 1)])
    metric = np.full(n_states, -np.inf)
    metric[0] = 0.0
    steps = soft.reshape(-1, len(_GENERATORS))
    choices = np.empty((len(steps), n_states), dtype=np.uint8)
    for t, z in enumerate(steps):
        candidates = metric[predecessors] + symbols @ z
        choices[t] = np.argmax(candidates, axis=0)
        metric = candidates[choices[t], states]
    state, bits = 0, []
    for t in range(len(steps) - 1, -1, -1):
        bits.append(state & 1)
        state = (state >> 1) | (int(choices[t, state]) << (_MEMORY - 1))
    return np.array(bits[::-1][:INFO_BITS], dtype=np.uint8)


def decode(soft: np.ndarray, min_agreement: float) -> tuple[int | None, float]:
    """Viterbi-decode ``CODED_BITS`` soft values; return ``(id or None, agreement)``.

    The id is returned only if its CRC matches and the normalised correlation of the soft
    values with the re-encoded codeword reaches ``min_agreement`` (Viterbi on noise also
    finds a codeword, just a poorly agreeing one).
    """
    bits = viterbi(soft)
    mark_id = payload_id(bits)
    symbols = 2.0 * conv_encode(bits) - 1.0
    agreement = float(symbols @ soft) / (np.linalg.norm(soft) * np.sqrt(len(soft)) + 1e-12)
    if mark_id is None or agreement < min_agreement:
        return None, agreement
    return mark_id, agreement
