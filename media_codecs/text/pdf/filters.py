"""Stream filters the codec reads (ISO 32000-1, 7.4): FlateDecode with PNG predictors, no others.

A PDF's metadata stream is normally unfiltered (14.3.2 asks for it so that tools which do not
parse PDF can find it); cross-reference and object streams are almost always FlateDecode, their
rows filtered with the PNG "Up" predictor. Inflation is capped: a few kilobytes of FlateDecode
can claim gigabytes.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.text.pdf.syntax import Dictionary, Name

if TYPE_CHECKING:
    import numpy as np

_FLATE = {"FlateDecode", "Fl"}
_PNG_PREDICTORS = range(10, 16)  # 7.4.4.4, Table 10: 10-15 are the PNG filters, chosen per row
_MAX_PYTHON_PREDICTOR_BYTES = 1024 * 1024  # Sub, Average and Paeth rows are undone byte by byte


def decode(dictionary: Dictionary, raw: bytes, limit: int) -> bytes:
    """The stream's data with its filters undone, at most `limit` bytes.

    Raises UnsupportedFormat for a filter other than FlateDecode, CorruptMedia for data that does
    not decode, MediaTooLarge when it would decode past `limit`.
    """
    filters, parameters = _filter_chain(dictionary)
    data = raw
    for name, options in zip(filters, parameters, strict=True):
        if name not in _FLATE:
            raise UnsupportedFormat(f"the PDF uses the {name} filter where the codec reads data")
        data = _undo_predictor(inflate(data, limit), options)
    return data


def inflate(compressed: bytes, limit: int) -> bytes:
    """zlib data inflated to at most `limit` bytes. Raises CorruptMedia, MediaTooLarge."""
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(compressed, limit)
    except zlib.error:
        raise CorruptMedia("a PDF stream does not inflate") from None
    if inflater.unconsumed_tail:
        raise MediaTooLarge(f"a PDF stream inflates past {limit // (1024 * 1024)} MB")
    return data


def _filter_chain(dictionary: Dictionary) -> tuple[list[str], list[Any]]:
    filters = dictionary.get("Filter")
    parameters = dictionary.get("DecodeParms")
    if filters is None:
        return [], []
    if isinstance(filters, Name):
        filters, parameters = [filters], [parameters]
    if not isinstance(filters, list) or not all(isinstance(name, Name) for name in filters):
        raise CorruptMedia("a PDF stream's /Filter is not a name or an array of names")
    if not isinstance(parameters, list):
        parameters = [parameters] * len(filters) if len(filters) == 1 else [None] * len(filters)
    if len(parameters) != len(filters):
        raise CorruptMedia("a PDF stream's /DecodeParms does not match its /Filter")
    return list(filters), parameters


def _undo_predictor(data: bytes, options: Any) -> bytes:
    import numpy as np

    predictor = options.get("Predictor", 1) if isinstance(options, Dictionary) else 1
    if predictor == 1:
        return data
    if predictor not in _PNG_PREDICTORS:
        raise UnsupportedFormat(f"the PDF uses predictor {predictor}")
    row_length, pixel_bytes = _row_layout(options)
    rows = len(data) // (row_length + 1)
    table = np.frombuffer(data, np.uint8, rows * (row_length + 1)).reshape(rows, row_length + 1)
    kinds, body = table[:, 0], table[:, 1:]
    if np.isin(kinds, (0, 2)).all():
        return _undo_up(kinds, body).tobytes()
    if len(data) > _MAX_PYTHON_PREDICTOR_BYTES:
        raise UnsupportedFormat("the PDF's stream uses PNG predictors other than Up on more than 1 MB")
    return _undo_rows(kinds, body, pixel_bytes)


def _row_layout(options: Dictionary) -> tuple[int, int]:
    values = [options.get(key, default) for key, default in (("Columns", 1), ("Colors", 1), ("BitsPerComponent", 8))]
    if not all(isinstance(value, int) and 0 < value <= 65_536 for value in values):
        raise CorruptMedia("a PDF stream's predictor parameters are out of range")
    columns, colours, bits = values
    return (columns * colours * bits + 7) // 8, max(1, colours * bits // 8)


def _undo_up(kinds: np.ndarray, body: np.ndarray) -> np.ndarray:
    """Rows filtered None (0) or Up (2): a running sum down each column, restarted at every None row."""
    import numpy as np

    if not len(body):
        return body
    sums = np.cumsum(body, axis=0, dtype=np.uint8)
    indices = np.arange(len(kinds))
    group_start = np.maximum.accumulate(np.where(kinds == 0, indices, 0))
    before = np.where((group_start > 0)[:, None], sums[np.maximum(group_start - 1, 0)], 0).astype(np.uint8)
    return sums - before


def _undo_rows(kinds: np.ndarray, body: np.ndarray, pixel_bytes: int) -> bytes:
    previous = bytearray(body.shape[1])
    out = bytearray()
    for kind, row in zip(kinds.tolist(), body.tolist(), strict=True):
        current = bytearray(len(row))
        for i, value in enumerate(row):
            left = current[i - pixel_bytes] if i >= pixel_bytes else 0
            up = previous[i]
            corner = previous[i - pixel_bytes] if i >= pixel_bytes else 0
            current[i] = (value + _predict(kind, left, up, corner)) & 0xFF
        out += current
        previous = current
    return bytes(out)


def _predict(kind: int, left: int, up: int, corner: int) -> int:
    if kind == 0:
        return 0
    if kind == 1:
        return left
    if kind == 2:
        return up
    if kind == 3:
        return (left + up) // 2
    if kind == 4:
        estimate = left + up - corner
        distances = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
        return (left, up, corner)[distances.index(min(distances))]
    raise CorruptMedia(f"a PDF stream row uses PNG filter type {kind}")
