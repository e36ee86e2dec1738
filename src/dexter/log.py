"""The `dexter` logger: a rotated file under `$DEXTER_HOME/logs/`, `--debug` mirrors it to stderr.

Modules log with `logging.getLogger(__name__)` (every name starts with `dexter.`). Nothing here
runs at import time beyond defining names, and the log file is opened only when the first record
arrives, so a command that logs nothing (every read-only one, normally) creates no file and no
folder. Every handler formats through `RedactingFormatter`, which replaces each registered secret
(provider and search keys from the environment, `.env` and settings) with `[redacted]`, including
inside tracebacks.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging.handlers

LOGGER_NAME = "dexter"
LOG_DIR_NAME = "logs"
LOG_FILE_NAME = "dexter.log"
MAX_BYTES = 1_000_000
BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
REDACTED = "[redacted]"
# Values shorter than this are not redacted: a two-letter "key" would blank out ordinary words.
MIN_SECRET_LENGTH = 6
# Environment names whose values are treated as secrets even when no registry names them.
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)

_secrets: set[str] = set()
_lock = threading.Lock()
_home: Path | None = None


def add_secrets(values: Iterable[str | None]) -> None:
    """Register values that must never appear in a log line."""
    with _lock:
        for value in values:
            text = (value or "").strip()
            if len(text) >= MIN_SECRET_LENGTH:
                _secrets.add(text)


def add_secrets_from_env(env: Mapping[str, str], names: Iterable[str] = ()) -> None:
    """Register the values of `names` and of every variable whose name looks like a secret."""
    wanted = set(names)
    add_secrets(value for name, value in env.items() if name in wanted or SECRET_NAME.search(name))


def redact(text: str) -> str:
    with _lock:
        # Longest first, so a key that contains another is replaced whole.
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    # And whatever the permissions layer knows (keys nested anywhere in settings.json).
    from dexter.permissions.secrets import redact as redact_known

    return redact_known(text)


def use_home(home: Path) -> None:
    """Where the log file goes once settings are known (`load_settings` calls this)."""
    global _home
    _home = home


def log_path(home: Path | None = None) -> Path:
    base = home or _home
    if base is None:
        from dexter.config import default_home

        base = default_home(Path.cwd(), os.environ)
    return base / LOG_DIR_NAME / LOG_FILE_NAME


_dotenv_read = False


def _read_dotenv_secrets() -> None:
    """Keys in `./.env` count even when the record comes before settings were loaded."""
    global _dotenv_read
    if _dotenv_read:
        return
    _dotenv_read = True
    path = Path.cwd() / ".env"
    if not path.is_file():
        return
    try:
        from dotenv import dotenv_values

        values = dotenv_values(path)
    except Exception:
        return  # an unreadable .env is reported by load_settings, not by the logger
    add_secrets_from_env({k: v for k, v in values.items() if v is not None})


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        _read_dotenv_secrets()
        return redact(super().format(record))


class LazyFileHandler(logging.Handler):
    """A RotatingFileHandler opened on the first record, at the path known by then."""

    def __init__(self, path: Callable[[], Path]) -> None:
        super().__init__(logging.DEBUG)
        self._path = path
        self._inner: logging.handlers.RotatingFileHandler | None = None
        self.opened_at: Path | None = None
        self.failed = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self._inner is None:
                from dexter.atomicfile import private_dir

                path = self._path()
                private_dir(path.parent)
                self._inner = _private_rotating_handler(path, self._write_failed)
                self._inner.setFormatter(self.formatter)
                self.opened_at = path
            self._inner.emit(record)
        except Exception:
            self._write_failed()

    def _write_failed(self) -> None:
        # Logging must never take the program down or print its own traceback (an unwritable
        # home, a full disk): the record is dropped; the command reports its own error.
        self.failed = True

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()
            self._inner = None
        super().close()


def _private_rotating_handler(
    path: Path, on_error: Callable[[], None]
) -> logging.handlers.RotatingFileHandler:
    """A rotating file handler whose files are private (0600, like everything in the home: the
    log quotes questions and tool arguments) and which reports a failed write to `on_error`
    instead of printing a traceback to stderr."""
    import io
    import logging.handlers  # socket, pickle & co.: only once something is logged

    from dexter.atomicfile import open_private

    class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
        def _open(self) -> io.TextIOWrapper:
            return open_private(Path(self.baseFilename), "a", encoding=self.encoding)

        def handleError(self, record: logging.LogRecord) -> None:
            on_error()

    return PrivateRotatingFileHandler(
        path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", delay=True
    )


_installed: list[logging.Handler] = []


def configure_logging(*, debug: bool = False, env: Mapping[str, str] | None = None) -> None:
    """Install the file handler (and a stderr mirror with `debug`). Calling it again replaces the
    handlers it installed before, so in-process callers (tests) can run `main()` repeatedly."""
    logger = logging.getLogger(LOGGER_NAME)
    for handler in _installed:
        logger.removeHandler(handler)
        handler.close()
    _installed.clear()
    global _dotenv_read, _home
    _dotenv_read = False
    _home = None
    add_secrets_from_env(os.environ if env is None else env)
    formatter = RedactingFormatter(FORMAT)
    file_handler = LazyFileHandler(log_path)
    file_handler.setFormatter(formatter)
    handlers: list[logging.Handler] = [file_handler]
    if debug:
        stream = logging.StreamHandler()
        stream.setLevel(logging.DEBUG)
        stream.setFormatter(formatter)
        handlers.append(stream)
    for handler in handlers:
        logger.addHandler(handler)
        _installed.append(handler)
    logger.setLevel(logging.DEBUG)
    # Our records stay ours: the root logger (and whatever a library set up on it) sees nothing.
    logger.propagate = False
