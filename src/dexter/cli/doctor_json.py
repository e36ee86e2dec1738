"""`dexter doctor --json`, and the database check both forms of doctor share.

The JSON carries the same facts as the text report, never a key: only whether one is present and
where it came from.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from dexter.cli.open_runtime import open_runtime
from dexter.config import ConfigError, Settings, get_secret


def database_where(settings: Settings) -> str:
    """The database in use, for people: the SQLite file, or the Postgres URL without password."""
    from dexter.store.database_url import database_target, display_url
    from dexter.store.db import DB_FILE_NAME

    try:
        url = database_target(settings).url
    except ConfigError:
        return "(database.url is not usable)"
    return f"Postgres {display_url(url)}" if url else str(settings.home / DB_FILE_NAME)


def database_state(settings: Settings) -> tuple[bool, str]:
    """(usable, what to say) for `$DEXTER_HOME/dexter.db`, or the Postgres database of team
    mode; a missing SQLite file is fine (created on use).

    Only read, so a check never creates or migrates anything."""
    from dexter.store.database_url import database_target
    from dexter.store.db import DB_FILE_NAME

    try:
        url = database_target(settings).url
    except ConfigError as error:
        return False, str(error)
    if url is not None:
        return _postgres_state(settings, url)
    path = settings.home / DB_FILE_NAME
    if not path.exists():
        return True, "not created yet"
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            result = conn.execute("PRAGMA quick_check").fetchone()
    except sqlite3.Error as error:
        return False, f"cannot be read ({error}); move it aside and Dexter starts a new one"
    if not result or result[0] != "ok":
        detail = result[0] if result else "no answer"
        return False, f"is damaged ({detail}); move it aside and Dexter starts a new one"
    return True, "ok"


def _postgres_state(settings: Settings, url: str) -> tuple[bool, str]:
    from dexter.errors import DexterError
    from dexter.store.manage import database_status

    try:
        status = database_status(settings.home, url)
    except DexterError as error:  # unreachable, refused, or the team extra missing
        return False, str(error)
    if status.version > status.newest:
        return False, f"schema {status.version} is newer than this Dexter knows: upgrade Dexter"
    if status.pending:
        return (
            True,
            f"reachable; schema {status.version}, migrated on first use (or `dexter db migrate`)",
        )
    return True, f"ok (schema {status.version})"


def doctor_report(settings: Settings, model_spec: str | None) -> tuple[dict[str, Any], bool]:
    import platform

    from dexter import __version__
    from dexter.cli.doctor import service_keys, settings_problems, window_known
    from dexter.data.settings import user_agent_problem
    from dexter.providers import (
        MODEL_SOURCE_LABELS,
        list_providers,
        missing_key_message,
        resolve_model,
        selected_model_spec,
    )

    ok = True
    db_ok, db_state = database_state(settings)
    errors, unknown, mcp = settings_problems(settings)
    ok = ok and db_ok and not settings.settings_error and not errors
    report: dict[str, Any] = {
        "version": __version__,
        "python": platform.python_version(),
        "home": {"path": str(settings.home), "exists": settings.home.is_dir()},
        "settings": {
            "path": str(settings.settings_path),
            "exists": settings.settings_path.is_file(),
            "error": settings.settings_error,
            "errors": errors,
            "unknown_keys": unknown,
        },
        "mcp": {
            "servers": [server.name for server in mcp.servers] if mcp else [],
            "disabled": list(mcp.disabled) if mcp else [],
            "notes": mcp.notes if mcp else [],
        },
        "database": {"ok": db_ok, "state": db_state, "where": database_where(settings)},
        "dotenv": str(settings.dotenv_path) if settings.dotenv_path else None,
    }
    try:
        statuses = list_providers(settings)
    except ConfigError as error:
        report["providers_error"] = str(error)
        return report, False
    report["providers"] = [
        {
            "id": s.id,
            "name": s.display_name,
            "protocol": s.protocol,
            "base_url": s.base_url,
            "base_url_source": s.base_url_source,
            "key_env": s.api_key_env,
            "key_required": s.key_required,
            "key_present": s.key_present,
            "key_source": s.key_source,
            "context_window": s.context_window,
            "default_model": s.default_model,
            "usable": s.usable,
            "error": s.error,
        }
        for s in statuses
    ]
    spec, source = selected_model_spec(model_spec, settings)
    model: dict[str, Any] = {"spec": spec, "source": MODEL_SOURCE_LABELS.get(source, source)}
    try:
        resolved = resolve_model(spec, settings)
        model.update(
            spec=resolved.spec,
            ready=resolved.key_usable,
            base_url=resolved.base_url,
            context_window=resolved.context_window,
            context_window_known=window_known(resolved.model_name, resolved.provider),
            problem=None
            if resolved.key_usable
            else missing_key_message(resolved.provider, settings),
        )
        ok = ok and resolved.key_usable

        # Which model each phase calls (a local single-model server gets the main one).
        model["phases"] = {
            plan.phase: {"spec": plan.spec, "source": plan.source, "reason": plan.reason}
            for plan in open_runtime(settings).phase_plans(spec)
        }
    except ConfigError as error:
        model.update(ready=False, problem=str(error))
        ok = False
    report["model"] = model
    agent = (settings.env.get("DEXTER_SEC_USER_AGENT") or "").strip()
    report["sec_user_agent"] = {
        "set": bool(agent),
        "problem": user_agent_problem(agent) if agent else "not set",
    }
    report["services"] = {
        env: get_secret(settings, env) is not None for env, _title in service_keys()
    }
    report["ok"] = ok
    return report, ok
