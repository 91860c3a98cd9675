"""RFC 8785 JSON Canonicalization Scheme (JCS).

``canonicalize(value)`` turns a JSON-compatible Python value into the unique byte
string that JCS prescribes, so that signatures over JSON do not depend on key
order, whitespace or number spelling:

* objects: members sorted by their keys compared as UTF-16 code units, no whitespace;
* strings: only the mandatory escapes (``\\"`` ``\\\\`` ``\\b`` ``\\f`` ``\\n`` ``\\r``
  ``\\t``, other controls below U+0020 as ``\\u00xx`` lowercase), everything else
  emitted as raw UTF-8;
* numbers: the ECMAScript ``Number.prototype.toString`` spelling of the IEEE-754 double;
* ``True``/``False``/``None`` as ``true``/``false``/``null``; lists and tuples as arrays.

Python ints are accepted only within the exactly representable double range
(|n| <= 2**53), because JCS numbers are doubles and silently rounding a larger
integer would sign a different value than the caller meant.

This module must not import Django.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

MAX_SAFE_INTEGER = 2**53

# ECMAScript switches to exponent notation outside 1e-7 < |x| < 1e21.
_ES_MAX_PLAIN_EXPONENT = 21
_ES_MIN_PLAIN_EXPONENT = -6

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def canonicalize(value: object) -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of ``value``.

    Raises TypeError for unsupported types or non-str object keys, and ValueError for
    NaN/Infinity, integers beyond 2**53 and strings that are not valid Unicode (lone surrogates).
    """
    parts: list[str] = []
    _serialize(value, parts)
    try:
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("JCS strings must be valid Unicode (lone surrogate found)") from exc


def _serialize(value: object, parts: list[str]) -> None:
    # bool before int: bool is a subclass of int in Python.
    if value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, str):
        parts.append(serialize_string(value))
    elif isinstance(value, int):
        parts.append(serialize_integer(value))
    elif isinstance(value, float):
        parts.append(serialize_number(value))
    elif isinstance(value, Mapping):
        _serialize_object(value, parts)
    elif isinstance(value, list | tuple):
        _serialize_array(value, parts)
    else:
        raise TypeError(f"cannot canonicalize value of type {type(value).__name__}")


def _serialize_object(obj: Mapping[object, object], parts: list[str]) -> None:
    for key in obj:
        if not isinstance(key, str):
            raise TypeError(f"JSON object keys must be str, got {type(key).__name__}")
    parts.append("{")
    for index, key in enumerate(sorted(obj, key=_utf16_sort_key)):
        if index:
            parts.append(",")
        parts.append(serialize_string(key))
        parts.append(":")
        _serialize(obj[key], parts)
    parts.append("}")


def _serialize_array(items: list[object] | tuple[object, ...], parts: list[str]) -> None:
    parts.append("[")
    for index, item in enumerate(items):
        if index:
            parts.append(",")
        _serialize(item, parts)
    parts.append("]")


def _utf16_sort_key(key: str) -> bytes:
    # Big-endian UTF-16 bytes compare exactly like the sequence of UTF-16 code units,
    # which is the order JCS mandates (it differs from code-point order above U+FFFF).
    # surrogatepass keeps lone surrogates sortable; canonicalize() rejects them later.
    return key.encode("utf-16-be", "surrogatepass")


def serialize_string(text: str) -> str:
    """Return ``text`` as a JCS string literal (quotes included, only mandatory escapes)."""
    out = ['"']
    for char in text:
        escaped = _SHORT_ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif char < " ":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def serialize_integer(number: int) -> str:
    """Return the JCS spelling of a Python int; raises ValueError beyond +/-2**53."""
    if abs(number) > MAX_SAFE_INTEGER:
        raise ValueError(f"integer {number} is not exactly representable as an IEEE-754 double")
    return str(number)


def serialize_number(number: float) -> str:
    """Return the ECMAScript Number-to-String spelling of a double; raises ValueError for NaN/Infinity."""
    if not math.isfinite(number):
        raise ValueError("NaN and Infinity are not allowed in JSON")
    if number == 0:
        return "0"  # also -0.0: ECMAScript prints negative zero as "0"
    sign = "-" if number < 0 else ""
    digits, point = _shortest_digits(abs(number))
    return sign + _format_es(digits, point)


def _shortest_digits(number: float) -> tuple[str, int]:
    """Return (digits, n) with number == 0.d1d2...dk * 10**n and k minimal.

    Python's repr() yields the shortest digit string that round-trips to the same
    double (choosing the closest one), which is exactly the digit selection that
    ECMAScript's Number::toString requires; only the layout differs.
    """
    mantissa, _, exponent = repr(number).partition("e")
    integer_part, _, fraction_part = mantissa.partition(".")
    digits = integer_part + fraction_part
    point = len(integer_part) + int(exponent or "0")
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0"), point


def _format_es(digits: str, point: int) -> str:
    # Direct transcription of ECMA-262 Number::toString steps with k = len(digits), n = point.
    k = len(digits)
    if k <= point <= _ES_MAX_PLAIN_EXPONENT:
        return digits + "0" * (point - k)
    if 0 < point <= _ES_MAX_PLAIN_EXPONENT:
        return digits[:point] + "." + digits[point:]
    if _ES_MIN_PLAIN_EXPONENT < point <= 0:
        return "0." + "0" * (-point) + digits
    exponent = point - 1
    exponent_text = f"+{exponent}" if exponent >= 0 else str(exponent)
    fraction = "." + digits[1:] if k > 1 else ""
    return digits[0] + fraction + "e" + exponent_text
