"""`dexter doctor`: which providers are usable, which model would run, and where settings live.

Everything shown is safe to paste into a bug report: keys are reported as set or missing, never
printed, even masked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dexter.cli.open_runtime import open_runtime
from dexter.config import ConfigError, Settings, get_secret

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from dexter.mcp.config import McpSetup


def service_keys() -> list[tuple[str, str]]:
    """Keys used outside the model layer, from the data and search-provider registries, so a new
    search provider shows up here without editing this file."""
    from dexter.tools.web.search import PROVIDER_CLASSES
    from dexter.tools.web.x_search import TOKEN_ENV

    keys = [("FINANCIAL_DATASETS_API_KEY", "Financial Datasets")]
    keys += [(cls.env_key, f"{cls.label} search") for cls in PROVIDER_CLASSES]
    keys.append((TOKEN_ENV, "X search"))
    return keys


_PROTOCOL_LABELS = {"openai": "OpenAI-compatible", "anthropic": "Anthropic Messages"}


def _print_phases(
    settings: Settings, console: Console, spec: str | None, *, check: bool = False
) -> bool:
    """Which model each phase will call: a local server that serves one model must not be sent
    the provider's fast model. False when a phase's model cannot be resolved or, with `check`,
    its endpoint cannot be reached."""
    from rich.text import Text

    try:
        plans = open_runtime(settings).phase_plans(spec)
    except ConfigError as exc:
        console.print(Text(f"  phases: {exc}", style="red"))
        return False
    fast = plans[1]
    _field(console, Text.assemble("  Phases  main ", (plans[0].spec, "cyan")), label=10)
    _field(
        console,
        Text.assemble(
            "          router, compaction, constraints, memory ",
            (fast.spec, "cyan"),
            (f"  ({fast.reason})", "dim"),
        ),
        label=10,
    )
    if check:
        # Each phase's model has its own setting; main wins when both phases share a spec.
        hints = {plans[0].spec: "--model or DEXTER_MODEL"}
        hints.setdefault(fast.spec, "DEXTER_ROUTER_MODEL")
        return _check_endpoints(settings, console, hints)
    return True


def _check_endpoints(settings: Settings, console: Console, hints: dict[str, str]) -> bool:
    """One tiny request per endpoint: is it reachable, and does it list the model we will call?
    Then what the server is: its kind, the window it runs the model at and the answer allowance
    Dexter will ask for (a server of the user's own is probed afresh, and the answer cached).

    False when one cannot be reached, refuses the key, or lists models without this one (every
    call would name a model it does not serve); no listing at all is only a warning, since some
    proxies answer chat calls without one."""
    from rich.text import Text

    from dexter.providers import resolve_model
    from dexter.providers.served import blocks_calls, served_models

    ok = True
    for spec, hint in hints.items():
        try:
            resolved = resolve_model(spec, settings)
        except ConfigError as exc:
            console.print(Text(f"  ✗ {spec}: {exc}", style="red"))
            ok = False
            continue
        served, problem = served_models(
            resolved.base_url, resolved.api_key, protocol=resolved.provider.protocol
        )
        if problem is not None:
            fatal = blocks_calls(problem)
            console.print(Text(f"  ✗ {spec}: {problem}", style="red" if fatal else "yellow"))
            ok = ok and not fatal
            if fatal:
                continue
        elif resolved.model_name in served or not served:
            console.print(Text(f"  ✓ {spec}: reachable at {resolved.base_url}", style="green"))
        else:
            shown = ", ".join(served[:5]) + (" …" if len(served) > 5 else "")
            console.print(
                Text(
                    f"  ✗ {spec}: {resolved.base_url} does not list {resolved.model_name} "
                    f"(it serves {shown}); set {hint} to one of those",
                    style="red",
                )
            )
            ok = False
        console.print(Text(f"    {server_line(settings, resolved)}", style="dim"))
    return ok


def server_line(settings: Settings, resolved: Any) -> str:
    """What kind of server answers, the window it runs the model at, and the answer allowance
    Dexter asks for there: "llamacpp (Server header: llama.cpp) · window 8,192 tokens (from the
    server) · answers up to 2,048 tokens (max_tokens)"."""
    import asyncio

    from dexter.models.profile import output_limit
    from dexter.providers.profiles import probed_profile, should_probe, static_profile
    from dexter.runtime import window_of

    profile, how = static_profile(resolved), "its own endpoint"
    if should_probe(resolved):
        report = asyncio.run(open_runtime(settings).server_report(resolved, fresh=True))
        profile = probed_profile(resolved, report)
        how = report.evidence or "not recognised; the generic profile"
    configured = resolved.provider.configured_window(resolved.model_name)
    window = profile.context_window or window_of(resolved)
    if configured is not None:
        window_text = f"window {window:,} tokens (from the settings)"
    elif profile.context_window:
        window_text = f"window {window:,} tokens (from the server)"
    else:
        window_text = (
            f"window not stated by the server (assuming {window:,} tokens; set contextWindow "
            "for the provider, or Dexter learns it from the first overflow)"
        )
    limit = output_limit(None, profile.default_output_tokens, window, 0)
    answers = (
        f"answers up to {limit:,} tokens ({profile.output_limit_param})"
        if limit is not None
        else "no answer limit sent (the server's own applies)"
    )
    return f"server: {profile.server_kind} ({how}) · {window_text} · {answers}"


def _sandbox_line() -> Any:
    """Which OS sandbox shell commands that run unasked get (or that there is none)."""
    from rich.text import Text

    from dexter.permissions.sandbox import detect_sandbox

    sandbox, about = detect_sandbox()
    if sandbox is not None:
        return Text.assemble("Sandbox      ", ("✓ ", "green"), about)
    return Text.assemble(
        "Sandbox      ",
        ("✗ none", "yellow"),
        f": {about}. Without it only plain readers (ls, cat, grep, git log …) run unasked; "
        "every other shell command asks.",
    )


def settings_problems(settings: Settings) -> tuple[list[str], list[str], McpSetup | None]:
    """(errors the commands would stop on, unknown keys they ignore, the MCP servers) for a
    settings file that parses; `dexter doctor` and `doctor --json` both report these."""
    from dexter.mcp.config import load_mcp

    if settings.settings_error:
        return [], [], None
    errors: list[str] = []
    unknown: list[str] = []
    mcp = None
    try:
        unknown = settings.parsed().unknown_keys()
    except ConfigError as exc:
        errors.append(str(exc))
    try:
        mcp = load_mcp(settings)
    except ConfigError as exc:
        errors.append(str(exc))
    return errors, unknown, mcp


def window_known(model_name: str, provider: Any) -> bool:
    from dexter.providers.discovery import known_window

    in_catalog = any(m.id == model_name for m in provider.models)
    return (
        model_name in provider.model_context_windows
        or in_catalog
        or known_window(model_name) is not None
    )


def _window_text(model_name: str, window: int, provider: Any) -> str:
    """A window Dexter only assumes is not stated as a fact about the model."""
    if window_known(model_name, provider):
        return f"context window {window:,} tokens"
    return (
        f"context window not known for {model_name} (assuming {window:,} tokens until the "
        "server reports one; set contextWindow for the provider to fix it)"
    )


def run_doctor(
    settings: Settings,
    console: Console,
    model_spec: str | None = None,
    *,
    check: bool = False,
    show_all: bool = False,
) -> int:
    """Print the diagnosis; 0 if the model that would be used now is usable, else 1. Providers
    in use or set up are shown in full, the others (`show_all`: none) named on one line."""
    import platform

    from rich.measure import Measurement
    from rich.text import Text

    from dexter import __version__
    from dexter.providers import (
        MODEL_SOURCE_LABELS,
        list_providers,
        missing_key_message,
        resolve_model,
        selected_model_spec,
    )

    ok = True
    console.print(Text(f"Dexter {__version__} doctor", style="bold"))
    console.print(Text(f"Python {platform.python_version()} ({platform.python_implementation()})"))

    from dexter.config import HOME_SOURCE_LABELS

    home_state = "exists" if settings.home.is_dir() else "not created yet"
    home_state += f"; {HOME_SOURCE_LABELS[settings.home_source]}"
    home_line = Text.assemble("DEXTER_HOME  ", (str(settings.home), "cyan"), f"  ({home_state})")
    _field(console, home_line)
    path = settings.settings_path
    settings_line = Text.assemble("Settings     ", (str(path), "cyan"), "  ")
    # The same readers the commands use: doctor never calls a file fine that they refuse.
    errors, unknown, mcp = settings_problems(settings)
    if settings.settings_error:
        ok = False
        settings_line.append("✗ does not parse", style="red")
    elif errors:
        ok = False
        settings_line.append("✗ commands refuse it (see below)", style="red")
    elif path.is_file():
        settings_line.append("✓ parses", style="green")
    else:
        settings_line.append("not present (defaults in use)", style="dim")
    _field(console, settings_line)
    if settings.settings_error:
        console.print(Text(f"  {settings.settings_error}", style="red"))
    for error in errors:
        console.print(Text(f"  ✗ {error}", style="red"))
    for line in unknown:
        console.print(Text(f"  ! {line}: ignored", style="yellow"))
    if mcp is not None and (mcp.servers or mcp.disabled):
        names = ", ".join(server.name for server in mcp.servers) or "none enabled"
        off = f" (disabled: {', '.join(mcp.disabled)})" if mcp.disabled else ""
        console.print(Text.assemble("MCP servers  ", (names, "cyan"), off))
        for note in mcp.notes:
            console.print(Text(f"  ! {note}", style="yellow"))
    from dexter.cli.doctor_json import database_state, database_where

    db_ok, db_state = database_state(settings)
    ok = ok and db_ok
    _field(
        console,
        Text.assemble(
            "Database     ",
            (database_where(settings), "cyan"),
            "  ",
            (("✓ " if db_ok else "✗ ") + db_state, "green" if db_ok else "red"),
        ),
    )
    dotenv = str(settings.dotenv_path) if settings.dotenv_path else "none in working directory"
    _field(console, Text.assemble(".env         ", (dotenv, "cyan")))
    _field(console, _sandbox_line())
    console.print()

    problems: list[str] = []
    try:
        statuses = list_providers(settings)
    except ConfigError as exc:
        console.print(Text(f"✗ Provider settings: {exc}", style="red"))
        return 1

    problems = [status.error for status in statuses if status.error]
    selected = _selected_provider(settings, model_spec)
    shown = [s for s in statuses if show_all or _set_up(s) or s.id == selected]
    rest = [s for s in statuses if s not in shown]
    # A column each when every URL fits on one line; otherwise the endpoint goes under the
    # provider's name (and the window column goes), so a URL is never broken across lines.
    # The window column goes first, then the URLs' https://, then the endpoint column itself.
    for layout in ({"wide": True}, {"wide": True, "compact": True}, {"wide": False}):
        table = _provider_table(shown, **layout)
        natural = Measurement.get(console, console.options.update_width(10_000), table).maximum
        if natural <= console.width:
            break
    console.print(table)
    if rest:
        names = ", ".join(status.display_name for status in rest)
        _field(console, Text.assemble(("Not set up   ", "bold"), f"{names}."))
        _field(
            console,
            Text(
                "             Keys: `dexter keys set PROVIDER`. Details: `dexter doctor --all`.",
                style="dim",
            ),
        )
    for problem in problems:
        console.print(Text(f"✗ {problem}", style="red"))
    console.print()

    spec, source = selected_model_spec(model_spec, settings)
    label = MODEL_SOURCE_LABELS.get(source, source)
    if source == "settings":
        label = f"settings file ({settings.settings_path})"
    try:
        resolved = resolve_model(spec, settings)
    except ConfigError as exc:
        console.print(Text.assemble("Model  ", (spec, "bold"), f"  (from {label})"))
        console.print(Text(f"✗ {exc}", style="red"))
        return 1
    console.print(Text.assemble("Model  ", (resolved.spec, "bold"), f"  (from {label})"))
    provider = resolved.provider
    if resolved.key_usable:
        console.print(
            Text(
                f"✓ ready: {provider.display_name} at {resolved.base_url}, "
                + _window_text(resolved.model_name, resolved.context_window, provider),
                style="green",
            )
        )
    else:
        ok = False
        console.print(Text(f"✗ {missing_key_message(provider, settings)}", style="red"))
    if not _print_phases(settings, console, spec, check=check):
        ok = False
    if provider.id == "ollama" and resolved.context_window == provider.context_window:
        console.print(
            Text(
                "  Ollama truncates silently past the model's num_ctx; if this model's window is "
                f"smaller than {provider.context_window:,}, set providers.ollama.contextWindows "
                "in the settings file.",
                style="yellow",
            )
        )

    console.print()
    from dexter.data.settings import user_agent_problem

    agent = (settings.env.get("DEXTER_SEC_USER_AGENT") or "").strip()
    agent_problem = user_agent_problem(agent) if agent else None
    if agent and agent_problem:
        sec = Text.assemble(
            "SEC EDGAR    ", ("✗ DEXTER_SEC_USER_AGENT", "red"), f" {agent_problem} ({agent})"
        )
    elif agent:
        sec = Text.assemble("SEC EDGAR    ", ("✓ user agent set", "green"), f" ({agent})")
    else:
        sec = Text.assemble(
            "SEC EDGAR    ",
            ("✗ DEXTER_SEC_USER_AGENT not set", "red"),
            ' (the SEC requires "Name email@example.com"; needed for key-less data)',
        )
    _field(console, sec)
    from dexter.tools.web.browser import browser_status

    available, detail = browser_status(settings)
    _field(
        console,
        Text.assemble(
            "Browser      ",
            ("✓ " + detail, "green") if available else ("✗ " + detail, "yellow"),
        ),
    )
    services = Text("Services     ")
    for index, (env_name, title) in enumerate(service_keys()):
        if index:
            services.append(", ")
        present = get_secret(settings, env_name) is not None
        services.append(f"{title} {'✓' if present else '✗'}", style="green" if present else "dim")
    _field(console, services)
    return 0 if ok else 1


_LABEL = 13  # "DEXTER_HOME  ": every field's value starts in this column


def _field(console: Console, line: Text, *, label: int = _LABEL) -> None:
    """`line` is a label padded to `label` columns and a value; a value too long for the
    terminal wraps under itself, at spaces, never under the label (and no line is padded)."""
    from rich.text import Text

    head, value = line[:label], line[label:]
    room = console.width - label
    if room < 20 or max(map(len, value.plain.split()), default=0) > room:
        console.print(line)  # a path longer than the room: folded at the edge, as before
        return
    for index, part in enumerate(value.wrap(console, room)):
        part.rstrip()
        console.print((head if index == 0 else Text(" " * label)) + part, soft_wrap=True)


def _set_up(status: Any) -> bool:
    """A provider the user has done something about: a key, a custom or overridden endpoint,
    a problem to fix, or none needed (a local server such as Ollama)."""
    return bool(
        status.key_present
        or not status.key_required
        or status.custom
        or status.base_url_overridden
        or status.error
    )


def _selected_provider(settings: Settings, model_spec: str | None) -> str | None:
    """The provider of the model that would run now (shown in full even without a key)."""
    from dexter.providers import selected_model_spec
    from dexter.providers.registry import provider_table
    from dexter.providers.resolve import split_model_spec

    spec, _ = selected_model_spec(model_spec, settings)
    try:
        return split_model_spec(spec, provider_table(settings))[0].id
    except ConfigError:
        return None  # said below, where the model is resolved


def _provider_table(statuses: list[Any], *, wide: bool, compact: bool = False) -> Table:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(
        title="Model providers", title_justify="left", box=box.SIMPLE_HEAD, leading=0 if wide else 1
    )
    if wide:
        table.add_column("Provider / --model", no_wrap=True)
        table.add_column("Endpoint", no_wrap=True)
    else:
        table.add_column("Provider / --model / endpoint", overflow="fold", ratio=1)
    table.add_column("API key", no_wrap=True)
    window = wide and not compact
    if window:
        table.add_column("Window", justify="right", no_wrap=True)
    for status in statuses:
        name = Text(status.display_name, style="bold")
        if status.custom:
            name.append(" (custom)", style="dim")
        name.append(f"\n{status.id}:{status.default_model or '<model>'}", style="cyan")
        shown = status.base_url or "—"
        if compact or not wide:  # the scheme costs the width a URL needs; http:// stays
            shown = shown.removeprefix("https://")
        url = Text(shown)
        if status.error:
            url = Text("✗ unset (see below)", style="red")
        elif status.base_url_overridden:
            url.append(f" (from {status.base_url_source})", style="dim")
        url.append("\n" + _PROTOCOL_LABELS[status.protocol], style="dim")
        if not status.key_required and not status.key_present:
            key = Text("no key needed", style="dim")
        elif status.key_present:
            via = "settings file" if status.key_source == "settings" else status.api_key_env
            key = Text(f"✓ {via}", style="green")
        else:
            key = Text(f"✗ {status.api_key_env or 'no apiKeyEnv'}", style="red")
        if window:
            table.add_row(name, url, key, f"{status.context_window:,}")
        elif wide:
            table.add_row(name, url, key)
        else:
            table.add_row(name + "\n" + url, key)
    return table
