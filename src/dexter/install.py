"""How this copy of Dexter was installed, and the one command that adds an optional extra to it.

A message that says "run `uv sync --extra reports`" is right in a source checkout and does
nothing for a tool installed with `uv tool install` or `pipx`, whose environments only their own
commands change. Every optional import (reports, browser, Slack, WhatsApp) names its missing
piece through `missing_extra`, so each says the step that fits: the route is read from what the
installers leave behind (uv's `uv-receipt.toml` and pipx's `pipx_metadata.json` in the tool's
environment, or a `pyproject.toml` beside the package in a checkout). `dexter --version` says it
too.

At the ground: the standard library and `dexter.errors` only.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Literal

from dexter import __version__
from dexter.errors import ConfigError

DISTRIBUTION = "dexter-py"

RouteKind = Literal["uv-tool", "pipx", "checkout", "pip"]


@dataclass(frozen=True)
class InstallRoute:
    kind: RouteKind
    # Where the tool was installed from, when it was not the registry: a clone or a wheel.
    source: str | None = None
    # Extras the tool was installed with (uv records them; reinstalling must keep them).
    extras: tuple[str, ...] = ()
    # The checkout's root (kind "checkout"), or the environment (the others).
    where: Path | None = None
    # A checkout whose environment `uv sync` made (its `.venv`), rather than `pip install -e`.
    uv_project: bool = False


@cache
def install_route() -> InstallRoute:
    """How the running Dexter was installed (read once per process)."""
    return detect_route(Path(sys.prefix), Path(__file__).resolve().parent)


def detect_route(prefix: Path, package_dir: Path) -> InstallRoute:
    """The route for an interpreter environment at `prefix` running the package in
    `package_dir`; separate from `install_route` so each route can be tested."""
    receipt = prefix / "uv-receipt.toml"
    if receipt.is_file():
        source, extras = _uv_receipt(receipt)
        return InstallRoute("uv-tool", source, extras, prefix)
    if (prefix / "pipx_metadata.json").is_file():
        return InstallRoute("pipx", _pipx_source(prefix / "pipx_metadata.json"), where=prefix)
    root = package_dir.parent.parent  # <root>/src/dexter
    if _is_our_project(root / "pyproject.toml"):
        uv_project = _inside(prefix, root / ".venv")
        return InstallRoute("checkout", where=root, uv_project=uv_project)
    return InstallRoute("pip", where=prefix)


def add_extra_command(extra: str, route: InstallRoute | None = None) -> str:
    """The one command that adds the optional `extra` to this installation."""
    route = route or install_route()
    if route.kind == "uv-tool":
        return f"uv tool install {_uv_tool_target(route, {*route.extras, extra})}"
    if route.kind == "pipx":
        packages = " ".join(shlex.quote(p) for p in extra_requirements(extra))
        if packages:
            return f"pipx inject {DISTRIBUTION} {packages}"
        return f"pipx install --force {shlex.quote(f'{route.source or DISTRIBUTION}[{extra}]')}"
    if route.kind == "checkout":
        if route.uv_project:
            return f"uv sync{_project_option(route.where)} --extra {extra}"
        return f"pip install -e {shlex.quote(f'{route.where}[{extra}]')}"
    return f"pip install {shlex.quote(f'{DISTRIBUTION}[{extra}]')}"


def reinstall_command(route: InstallRoute | None = None) -> str:
    """The one command that reinstalls this installation as it is (its extras kept), for a
    package that went missing or a file that was damaged."""
    route = route or install_route()
    if route.kind == "uv-tool":
        return f"uv tool install --reinstall {_uv_tool_target(route, set(route.extras))}"
    if route.kind == "pipx":
        return f"pipx reinstall {DISTRIBUTION}"
    if route.kind == "checkout":
        if route.uv_project:
            return f"uv sync{_project_option(route.where)} --reinstall"
        return f"pip install --force-reinstall -e {shlex.quote(str(route.where))}"
    return f"pip install --force-reinstall {DISTRIBUTION}"


def _uv_tool_target(route: InstallRoute, extras: set[str]) -> str:
    """What `uv tool install` is given for this tool with `extras`: where it came from (a
    clone, a wheel, git or a URL in the PEP 508 form), else the registry's name; quoted."""
    wanted = f"[{','.join(sorted(extras))}]" if extras else ""
    if route.source and "://" in route.source:
        return shlex.quote(f"{DISTRIBUTION}{wanted} @ {route.source}")
    return shlex.quote(f"{route.source or DISTRIBUTION}{wanted}")


def missing_extra(what: str, extra: str, package: str | None = None) -> ConfigError:
    """The error for `what` (e.g. "PDF reports") needing the optional `extra`: names the
    missing package and the install step that fits how Dexter was installed."""
    missing = f", and {package} is not installed" if package else ""
    return ConfigError(
        f"{what} need the optional `{extra}` extra{missing}: run `{add_extra_command(extra)}`."
    )


def describe_installation(route: InstallRoute | None = None) -> str:
    """`dexter --version`: the version on the first line (what scripts read), then how this
    copy was installed and with which extras."""
    route = route or install_route()
    if route.kind == "uv-tool":
        how = f"uv tool, from {route.source}" if route.source else "uv tool"
    elif route.kind == "pipx":
        how = f"pipx, from {route.source}" if route.source else "pipx"
    elif route.kind == "checkout":
        how = f"source checkout {route.where}"
    else:
        how = f"pip, in {route.where}"
    extras = _installed_extras(route)
    with_extras = f" (extras: {', '.join(extras)})" if extras else " (no extras)"
    return f"dexter {__version__}\ninstalled: {how}{with_extras}"


def extra_requirements(extra: str) -> list[str]:
    """The requirements the package metadata lists for `extra`, markers dropped."""
    found = []
    for line in _requires():
        requirement, _, marker = line.partition(";")
        if re.search(rf"extra\s*==\s*['\"]{re.escape(extra)}['\"]", marker):
            found.append(requirement.strip().replace(" ", ""))
    return found


def _installed_extras(route: InstallRoute) -> list[str]:
    """The extras whose packages are all importable here (what `--version` reports)."""
    names = sorted({m.group(1) for line in _requires() if (m := _EXTRA.search(line))})
    present = []
    for name in names:
        modules = [_module_name(r) for r in extra_requirements(name)]
        if modules and all(_importable(m) for m in modules):
            present.append(name)
    return present or list(route.extras)


_EXTRA = re.compile(r"extra\s*==\s*['\"]([^'\"]+)['\"]")
# Distribution names whose module is named differently.
_MODULES = {"slack-bolt": "slack_bolt", "slack-sdk": "slack_sdk"}


def _module_name(requirement: str) -> str:
    name = re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower()
    return _MODULES.get(name, name.replace("-", "_"))


def _importable(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@cache
def _requires() -> tuple[str, ...]:
    try:
        return tuple(metadata.requires(DISTRIBUTION) or ())
    except metadata.PackageNotFoundError:
        return ()


def _uv_receipt(path: Path) -> tuple[str | None, tuple[str, ...]]:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None, ()
    requirements = data.get("tool", {}).get("requirements", [])
    ours = next(
        (r for r in requirements if isinstance(r, dict) and r.get("name") == DISTRIBUTION), {}
    )
    source = ours.get("directory") or ours.get("path") or ours.get("git") or ours.get("url")
    extras = tuple(str(e) for e in ours.get("extras", ()) if isinstance(e, str))
    return (str(source) if source else None), extras


def _pipx_source(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        spec = data["main_package"]["package_or_url"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None
    return spec if isinstance(spec, str) and spec != DISTRIBUTION else None


def _is_our_project(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(rf'^name\s*=\s*"{re.escape(DISTRIBUTION)}"', text, re.MULTILINE) is not None


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve() == folder.resolve()
    except OSError:
        return False


def _project_option(root: Path | None) -> str:
    """`--project ROOT` when the command would run outside the checkout, where a plain
    `uv sync` would find no project (or another one)."""
    if root is None:
        return ""
    try:
        Path.cwd().resolve().relative_to(root)
    except (OSError, ValueError):
        return f" --project {shlex.quote(str(root))}"
    return ""


__all__ = [
    "DISTRIBUTION",
    "InstallRoute",
    "add_extra_command",
    "describe_installation",
    "detect_route",
    "extra_requirements",
    "install_route",
    "missing_extra",
    "reinstall_command",
]
