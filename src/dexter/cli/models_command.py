"""`dexter models [list|default]`: the models Dexter knows per configured provider, what a local
or custom server says it serves (`GET …/models`), and the default model."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_LIST_TIMEOUT = 3.0


def add_models_parser(commands: Any) -> None:
    models = commands.add_parser(
        "models",
        help="models per configured provider, and the default one",
        description="Known models of every provider you have configured (a key set, or no key "
        "needed), plus what a custom or local server lists at /v1/models.",
    )
    models.set_defaults(command_run=_run, models_command="list", json=False)
    actions = models.add_subparsers(dest="models_command", metavar="ACTION")
    listing = actions.add_parser("list", help="list models (the default action)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    default = actions.add_parser("default", help="show the default model, or set it")
    default.add_argument("spec", nargs="?", help="provider:model to save as the default")


def _run(args: argparse.Namespace) -> int:
    from dexter.config import load_settings

    settings = load_settings()
    if args.models_command == "default":
        return _default(settings, args.spec)
    return _list(settings, as_json=bool(getattr(args, "json", False)))


def _default(settings: Any, spec: str | None) -> int:
    from dexter.config import save_setting
    from dexter.providers import MODEL_SOURCE_LABELS, selected_model_spec
    from dexter.providers.registry import provider_table
    from dexter.providers.resolve import split_model_spec

    if not spec:
        text, source = selected_model_spec(None, settings)
        print(f"{text}  ({MODEL_SOURCE_LABELS.get(source, source)})")
        return EXIT_OK
    provider, name = split_model_spec(spec, provider_table(settings))  # ConfigError: exit 2
    full = f"{provider.id}:{name}"
    save_setting(settings.settings_path, "model", full)
    print(f"Default model: {full} (saved in {settings.settings_path})")
    doubt = _unknown_model(settings, provider, name, bare=":" not in spec)
    if doubt:
        print(f"dexter: warning: {doubt}", file=sys.stderr)
    if settings.env.get("DEXTER_MODEL"):
        print("Note: DEXTER_MODEL is set in the environment and takes precedence.")
    return EXIT_OK


def _unknown_model(settings: Any, provider: Any, name: str, *, bare: bool) -> str | None:
    """Why `name` may not be a model of `provider`, when Dexter can tell (a built-in endpoint
    with a catalogue), else None. A warning, not a refusal: catalogues lag behind providers."""
    import difflib

    overridden = bool(provider.base_url_env and settings.env.get(provider.base_url_env))
    known = [m.id for m in provider.models]
    if provider.custom or overridden or not known or name in known:
        return None
    if name in (provider.default_model, provider.fast_model):
        return None
    where = ", where a name without `provider:` goes" if bare else ""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f" Did you mean {provider.id}:{close[0]}?" if close else ""
    return (
        f"{name!r} is not a model Dexter knows for {provider.display_name} ({', '.join(known)})"
        f"{where}; saved anyway.{hint} `dexter doctor --check` asks the provider whether it "
        "serves it."
    )


def _served(base_url: str, api_key: str | None) -> tuple[list[str], str | None]:
    from dexter.providers.served import served_models

    return served_models(base_url, api_key, timeout=_LIST_TIMEOUT)


def _list(settings: Any, *, as_json: bool) -> int:
    from dexter.providers import list_providers, selected_model_spec
    from dexter.providers.registry import provider_table
    from dexter.providers.resolve import resolve_model

    table = provider_table(settings)
    current, _ = selected_model_spec(None, settings)
    rows: list[dict[str, Any]] = []
    for status in list_providers(settings):
        if not status.usable:
            continue
        spec = table[status.id]
        known = [(m.id, m.label) for m in spec.models]
        if spec.default_model and spec.default_model not in {k for k, _ in known}:
            known.insert(0, (spec.default_model, ""))
        served: list[str] = []
        problem: str | None = None
        if status.base_url_overridden or spec.custom:
            key = resolve_model(f"{status.id}:{spec.default_model or 'x'}", settings).api_key
            served, problem = _served(status.base_url, key)
        for model_id, label in known:
            rows.append(_row(status.id, model_id, label, "known", current))
        for model_id in served:
            if model_id not in {k for k, _ in known}:
                rows.append(_row(status.id, model_id, "", "served", current))
            else:
                for row in rows:
                    if row["spec"] == f"{status.id}:{model_id}":
                        row["source"] = "known, served"
        if problem:
            print(f"dexter: {status.id}: {problem}", file=sys.stderr)
    if as_json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        print(
            "No provider is configured. Set a key (`dexter keys set openai`) "
            "or see `dexter doctor`."
        )
        return EXIT_OK
    from rich.console import Console

    from dexter.cli.tables import Col, Grid, render

    grid = Grid(
        title="Models",
        columns=[
            Col("", whole=True, key=True, min_width=1),
            Col("--model", whole=True, key=True),
            Col("Name", min_width=12),
            Col("From", whole=True),
        ],
        caption="* the default; set it with `dexter models default provider:model`",
    )
    for row in rows:
        grid.add_row("*" if row["default"] else "", row["spec"], row["label"], row["source"])
    render(Console(), grid)
    return EXIT_OK


def _row(provider: str, model_id: str, label: str, source: str, current: str) -> dict[str, Any]:
    spec = f"{provider}:{model_id}"
    return {
        "provider": provider,
        "model": model_id,
        "spec": spec,
        "label": label,
        "source": source,
        "default": spec == current,
    }
