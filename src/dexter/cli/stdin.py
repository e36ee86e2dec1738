"""Text piped to a command on stdin, read as UTF-8 or refused in one line.

Python decodes stdin with `surrogateescape` under a C or POSIX locale, so bytes that are not
UTF-8 would arrive as lone surrogates and be stored or sent as they are. Reading the bytes and
decoding them strictly names the first bad byte instead.
"""

from __future__ import annotations

import sys

from dexter.errors import ConfigError


def read_utf8(what: str, *, first_line: bool = False) -> str:
    """All of stdin (or its first line) as text; `what` names it in the error ("the key")."""
    stream = sys.stdin
    if stream is None:
        return ""
    buffer = getattr(stream, "buffer", None)
    if buffer is None:  # replaced by a text-only stream (tests, embedders)
        return stream.readline() if first_line else stream.read()
    raw: bytes = buffer.readline() if first_line else buffer.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{what} on stdin is not valid UTF-8 (byte 0x{raw[error.start]:02x} at offset "
            f"{error.start}); send UTF-8 text."
        ) from None
