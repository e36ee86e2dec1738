"""`dexter config path|show|edit`."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# Values under keys like these are shown as "(set)", so `config show` is safe to paste.
_SECRET = re.compile(r"(key|token|secret|password)", re.IGNORECASE)


def add_config_parser(commands: Any) -> None:
    config = commands.add_parser(
        "config",
        help="where settings live, what they say, and an editor on them",
        description="Settings live in settings.json in the Dexter home: DEXTER_HOME if set, else "
        "the nearest .dexter folder here or above, else ~/.dexter (`dexter config path` prints "
        "it).",
    )
    config.set_defaults(command_run=_run)
    actions = config.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    actions.add_parser("path", help="print the settings file's path")
    show = actions.add_parser("show", help="print the settings file (secrets hidden)")
    show.add_argument("--json", action="store_true", help="print JSON only")
    actions.add_parser("edit", help="open the settings file in $VISUAL or $EDITOR, then check it")


def _on_a_terminal() -> bool:
    try:
        return all(s is not None and s.isatty() for s in (sys.stdin, sys.stdout))
    except ValueError:  # a closed stream
        return False


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: ("(set)" if _SECRET.search(str(k)) and isinstance(v, str) else _redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value


def _run(args: argparse.Namespace) -> int:
    from dexter.config import ConfigError, load_settings, read_settings_file

    settings = load_settings(tolerate_corrupt=True)
    path = settings.settings_path
    if args.config_command == "path":
        print(path)
        return EXIT_OK
    if args.config_command == "show":
        data = read_settings_file(path)  # a corrupt file is a ConfigError with its line
        if args.json:
            print(json.dumps(_redact(data), indent=2, ensure_ascii=False))
        elif not data:
            print(f"{path}: no settings yet (defaults apply). `dexter config edit` to add some.")
        else:
            print(f"# {path}")
            print(json.dumps(_redact(data), indent=2, ensure_ascii=False))
        return EXIT_OK
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        if not _on_a_terminal():
            # vi without a terminal waits for keys nobody can type (a pipe, cron, an IDE task).
            raise ConfigError(
                f"no editor: set VISUAL or EDITOR (e.g. EDITOR=nano), or edit {path} directly; "
                "with no terminal here, vi would wait forever."
            )
        editor = "vi"
    if not path.exists():
        from dexter.atomicfile import PRIVATE, private_dir, write_text

        private_dir(path.parent)
        write_text(path, "{\n}\n", mode=PRIVATE)
    try:
        subprocess.run([*shlex.split(editor), str(path)], check=False)
    except FileNotFoundError:
        raise ConfigError(f"editor {editor!r} not found; set VISUAL or EDITOR.") from None
    try:
        read_settings_file(path)
    except ConfigError as error:
        print(f"dexter: {error} Run `dexter config edit` again to fix it.", file=sys.stderr)
        return EXIT_USAGE
    print(f"{path} parses.")
    return EXIT_OK
