"""Reading the platforms' records (JSON objects) field by field, refusing an unexpected shape.

Channel parsers read only the fields they use, through `Record`, so a record of a shape nobody
expected (a chat id that is an object, a text that is a list, a date out of range) raises
`MalformedRecord` naming the field and its type, never its content, instead of an AttributeError
deep in the parser. `parse_or_skip` turns that into one log line and a skipped record: one bad
record must never stop a channel that is meant to run for weeks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from dexter.config import json_type

log = logging.getLogger("dexter.gateway")

T = TypeVar("T")


class MalformedRecord(ValueError):
    """A record that does not have the shape the platform documents."""


class Record:
    """One JSON object and where it sits (`message.chat`), for errors that name the field."""

    def __init__(self, value: object, path: str) -> None:
        if not isinstance(value, dict):
            raise MalformedRecord(f"{path} is {json_type(value)}, not an object")
        self.data: dict[str, Any] = value
        self.path = path

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def _wrong(self, key: str, expected: str) -> MalformedRecord:
        return MalformedRecord(
            f"{self.path}.{key} is {json_type(self.data.get(key))}, not {expected}"
        )

    def _present(self, key: str) -> bool:
        return self.data.get(key) is not None

    def obj(self, key: str) -> Record:
        return Record(self.data.get(key), f"{self.path}.{key}")

    def maybe_obj(self, key: str) -> Record | None:
        return self.obj(key) if self._present(key) else None

    def items(self, key: str) -> list[tuple[object, str]]:
        """A list's items as they are, each with its path, to be read one by one (so one bad
        item need not cost the others); absent is empty."""
        items = self.data.get(key)
        if items is None:
            return []
        if not isinstance(items, list):
            raise self._wrong(key, "an array")
        return [(item, f"{self.path}.{key}[{i}]") for i, item in enumerate(items)]

    def objects(self, key: str) -> list[Record]:
        """A list of objects; absent is empty."""
        return [Record(item, path) for item, path in self.items(key)]

    def text(self, key: str) -> str:
        """A string field; absent (or null) is ""."""
        value = self.data.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self._wrong(key, "a string")
        return value

    def required_text(self, key: str) -> str:
        value = self.text(key)
        if not value:
            raise MalformedRecord(f"{self.path}.{key} is missing")
        return value

    def integer(self, key: str) -> int:
        value = self.data.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._wrong(key, "an integer")
        return value

    def maybe_integer(self, key: str) -> int | None:
        return self.integer(key) if self._present(key) else None

    def flag(self, key: str) -> bool:
        value = self.data.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self._wrong(key, "a boolean")
        return value


def timestamp(seconds: float, path: str) -> datetime:
    """Unix seconds as an aware datetime; a value no clock can show is a malformed record."""
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise MalformedRecord(f"{path} is not a time ({exc})") from None


def parse_or_skip(parse: Callable[[], T], *, source: str, what: str) -> T | None:
    """`parse()`, or None after one log line when the record cannot be read.

    `source` names the account ("telegram/default"), `what` the record ("update 17"). A shape
    the parser refused is a warning naming the field; anything else the parser raised is a bug
    on our side, still one line on the console (the traceback goes to the log file only)."""
    try:
        return parse()
    except MalformedRecord as exc:
        log.warning("%s: skipped malformed %s: %s", source, what, exc)
    except Exception as exc:
        log.warning("%s: skipped %s that could not be read (%s)", source, what, type(exc).__name__)
        log.debug("reading %s from %s failed", what, source, exc_info=True)
    return None
