"""multipart/form-data bodies built in memory, so an upload can be streamed with progress (RFC 7578)."""

from __future__ import annotations

import secrets


def encode(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    """Return (body, Content-Type) for text `fields` and `files` given as name -> (filename, bytes)."""
    boundary = "svc-" + secrets.token_hex(16)
    parts: list[bytes] = []
    for name, value in fields.items():
        parts += [f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"\r\n\r\n'.encode(),
                  value.encode(), b"\r\n"]
    for name, (filename, data) in files.items():
        parts += [(f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"; '
                   f'filename="{_quoted(filename)}"\r\nContent-Type: application/octet-stream\r\n\r\n').encode(),
                  data, b"\r\n"]
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def _quoted(text: str) -> str:
    # RFC 7578 4.2: quotes and line breaks in a name are percent-encoded, as browsers do.
    return text.replace("\\", "%5C").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")
