"""`dexter keys set|list|path|rm`: provider API keys stored in the Dexter home, mode 0600.

The environment (and `.env`) still wins over a stored key; stored values are never printed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_keys_parser(commands: Any) -> None:
    keys = commands.add_parser(
        "keys",
        help="store provider API keys (mode 0600 in the Dexter home; env vars still win)",
        description="API keys for model providers, kept in $DEXTER_HOME/keys.json, readable by "
        "you only. An environment variable (or .env) with the same name takes precedence.",
    )
    keys.set_defaults(command_run=_run)
    actions = keys.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    set_key = actions.add_parser("set", help="store a key, typed without echo (or piped on stdin)")
    set_key.add_argument("name", help="provider (openai, anthropic, …) or its variable name")
    listing = actions.add_parser("list", help="which keys are stored or set, never their values")
    listing.add_argument("--json", action="store_true", help="print JSON")
    actions.add_parser("path", help="print where keys are stored")
    remove = actions.add_parser("rm", help="forget a stored key")
    remove.add_argument("name", help="provider or variable name")


def _run(args: argparse.Namespace) -> int:
    from dexter.config import ConfigError, load_settings
    from dexter.keystore import keys_path

    settings = load_settings()
    if args.keys_command == "path":
        print(keys_path(settings.home))
        return EXIT_OK
    if args.keys_command == "list":
        return _list(settings, as_json=args.json)
    variable = _variable(settings, args.name)
    if variable is None:
        raise ConfigError(_unknown(settings, args.name))
    if args.keys_command == "rm":
        from dexter.keystore import remove_key

        removed = remove_key(settings.home, variable)
        print(f"Removed {variable}." if removed else f"No stored {variable}.")
        return EXIT_OK
    return _set(settings, variable)


def _names(settings: Any) -> dict[str, str]:
    """Provider id → its key variable, for providers that take a key."""
    from dexter.providers.registry import provider_table

    return {
        spec.id: spec.api_key_env for spec in provider_table(settings).values() if spec.api_key_env
    }


def _variable(settings: Any, name: str) -> str | None:
    names = _names(settings)
    if name.lower() in names:
        return names[name.lower()]
    if name.upper() in names.values():
        return name.upper()
    return None


def _unknown(settings: Any, name: str) -> str:
    from dexter.providers.registry import closest_provider

    names = _names(settings)
    match = closest_provider(name, [*names, *names.values()])
    hint = f" Did you mean {match!r}?" if match else ""
    return f"unknown key {name!r}.{hint} Known: {', '.join(sorted(names))}."


def _set(settings: Any, variable: str) -> int:
    from dexter.keystore import save_key

    if sys.stdin is not None and sys.stdin.isatty():
        import getpass

        value = getpass.getpass(f"Paste the value of {variable} (not echoed): ")
    else:
        from dexter.cli.stdin import read_utf8

        value = read_utf8(f"the value of {variable}", first_line=True)
    value = _checked_key(variable, value.strip())
    path = save_key(settings.home, variable, value)
    print(f"Stored {variable} in {path} (readable by you only).")
    if settings.env.get(variable):
        print(f"Note: {variable} is also set in the environment, which takes precedence.")
    return EXIT_OK


def _checked_key(variable: str, value: str) -> str:
    """`value` if it can be a key; a key copied from the docs, or one with characters no key
    holds, is refused with nothing stored (the provider would only answer 401 later)."""
    from dexter.config import ConfigError, is_placeholder

    if not value:
        raise ConfigError(f"no value given for {variable}; nothing stored.")
    if is_placeholder(value):
        raise ConfigError(
            f"{variable}: the value is a placeholder from an example (like `sk-...`, `your-key` "
            "or `<KEY>`), not a key; paste the key your provider issued. Nothing stored."
        )
    odd = next((ch for ch in value if not (ch.isascii() and ch.isprintable()) or ch == " "), None)
    if odd is not None:
        raise ConfigError(
            f"{variable}: the value holds {odd!r} (U+{ord(odd):04X}), which no API key contains; "
            "check what was pasted. Nothing stored."
        )
    return value


def _list(settings: Any, *, as_json: bool) -> int:
    import json

    from dexter.keystore import KeyStoreError, keys_path, load_keys

    try:
        stored = load_keys(settings.home)
    except KeyStoreError as error:
        print(f"dexter: {error}", file=sys.stderr)
        return EXIT_FAILED
    rows = [
        {
            "provider": provider,
            "variable": variable,
            "stored": variable in stored,
            "environment": bool(settings.env.get(variable)),
        }
        for provider, variable in sorted(_names(settings).items())
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    from rich.console import Console

    from dexter.cli.tables import Col, Grid, render

    grid = Grid(
        title=f"API keys ({keys_path(settings.home)})",
        columns=[
            Col("Provider", key=True, whole=True),
            Col("Variable", whole=True),
            Col("Stored", whole=True),
            Col("Environment", whole=True),
        ],
        caption="the environment wins over a stored key; values are never shown",
    )
    for row in rows:
        grid.add_row(
            str(row["provider"]),
            str(row["variable"]),
            "yes" if row["stored"] else "—",
            "set" if row["environment"] else "—",
        )
    render(Console(), grid)
    return EXIT_OK
