"""The container image and the compose file, checked without a container engine.

There is no Docker engine in CI, so the Dockerfile, compose.yaml and .dockerignore are parsed
and held to what an operator relies on (every service, health checks, a non-root user, no secret
in the image or the compose file), and the image's own commands run here, outside a container,
with the environment and secret files compose would give them.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from dexter.permissions.secrets import is_secret_name

ROOT = Path(__file__).resolve().parents[1]
DEXTER_SERVICES = ("migrate", "worker", "gateway", "scheduler", "web")
HEALTH = ["dexter", "doctor", "--health"]


# -- Dockerfile --------------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per logical line: continuations joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    return [(word.upper(), rest.strip()) for word, _, rest in (x.partition(" ") for x in logical)]


def stages() -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for instruction in dockerfile_instructions():
        if instruction[0] == "FROM":
            found.append([])
        if found:
            found[-1].append(instruction)
    return found


def test_the_image_is_built_in_stages_from_the_lock_file() -> None:
    built = stages()
    assert len(built) >= 2, "a build stage and a slim runtime stage"
    build, runtime = built[0], built[-1]
    assert all("slim" in args for op, args in dockerfile_instructions() if op == "FROM")
    syncs = [args for op, args in build if op == "RUN" and "uv sync" in args]
    assert syncs and all("--frozen" in s and "--no-dev" in s for s in syncs)
    # The runtime stage takes the built environment, not the build tools or the sources.
    copies = [args for op, args in runtime if op == "COPY"]
    assert copies == ["--from=build /opt/dexter /opt/dexter"]
    extras = re.search(r'ARG DEXTER_EXTRAS="([^"]+)"', (ROOT / "Dockerfile").read_text())
    assert extras is not None
    declared = pyproject()["project"]["optional-dependencies"]
    assert "team" in extras.group(1).split()
    assert set(extras.group(1).split()) <= set(declared)


def test_the_image_runs_as_a_numeric_non_root_user() -> None:
    runtime = stages()[-1]
    users = [args for op, args in runtime if op == "USER"]
    assert users, "the runtime stage sets USER"
    user = users[-1].split(":")[0]
    assert user.isdigit() and int(user) != 0
    # Nothing runs as root after the switch.
    after = runtime[[op for op, _ in runtime].index("USER") :]
    assert not [args for op, args in after if op == "RUN"]


def test_the_image_checks_its_health_and_runs_dexter() -> None:
    runtime = dict(stages()[-1])
    health = runtime["HEALTHCHECK"]
    assert "--timeout=" in health and "--interval=" in health
    assert json.loads(health.partition("CMD")[2].strip()) == HEALTH
    entrypoint = json.loads(runtime["ENTRYPOINT"])
    assert entrypoint[-1] == "dexter"
    assert "DEXTER_HOME=/var/lib/dexter" in runtime["ENV"]


def test_no_secret_is_baked_into_the_image() -> None:
    for op, args in dockerfile_instructions():
        if op in ("ENV", "ARG"):
            for name, _, value in (p.partition("=") for p in args.split()):
                assert not (is_secret_name(name) and value), f"{op} {name} bakes a secret in"
        if op in ("COPY", "ADD") and "--from=" not in args:
            sources = [a for a in args.split()[:-1] if not a.startswith("--")]
            assert all(in_build_context(s) for s in sources), f"{op} {args}: not in the context"


# -- .dockerignore -----------------------------------------------------------------------------


def in_build_context(path: str) -> bool:
    """Whether `path` reaches the build under .dockerignore (last matching pattern wins; a
    pattern matching a parent folder covers what is inside)."""
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    included = True
    for pattern in patterns:
        negated = pattern.startswith("!")
        body = pattern.lstrip("!").strip("/")
        if any(_matches(body, prefix) for prefix in prefixes):
            included = negated
    return included


def _matches(pattern: str, path: str) -> bool:
    if pattern.startswith("**/"):
        tail = pattern[3:]
        return any(fnmatch.fnmatchcase(piece, tail) for piece in path.split("/")[-1:])
    return path.count("/") == pattern.count("/") and fnmatch.fnmatchcase(path, pattern)


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        "secrets/postgres_password",
        ".git/config",
        ".dexter/keys.json",
        ".venv/bin/python",
        "src/dexter/.env",
        "tests/test_container.py",
        "src/dexter/__pycache__/config.cpython-311.pyc",
    ],
)
def test_secrets_and_clutter_stay_out_of_the_build_context(path: str) -> None:
    assert not in_build_context(path)


def test_the_build_context_holds_what_the_image_is_built_from() -> None:
    for path in ("pyproject.toml", "uv.lock", "README.md", "LICENSE", "src/dexter/config.py"):
        assert in_build_context(path), path


def test_the_compose_secrets_folder_is_never_committed() -> None:
    assert "secrets/" in (ROOT / ".gitignore").read_text().splitlines()


# -- compose.yaml ------------------------------------------------------------------------------


@cache
def compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert isinstance(data, dict)
    return data


@cache
def pyproject() -> dict[str, Any]:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_service_is_there_with_its_health_check() -> None:
    services = compose()["services"]
    assert set(services) == {"db", *DEXTER_SERVICES}
    db = services["db"]
    assert db["image"].startswith("pgvector/pgvector:")
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    assert any(v.endswith(":/var/lib/postgresql/data") for v in db["volumes"])
    for name in ("worker", "gateway", "scheduler"):
        assert services[name]["healthcheck"]["test"] == ["CMD", *HEALTH], name
        assert services[name]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )
        assert services[name]["restart"] == "unless-stopped"
    migrate = services["migrate"]
    assert migrate["restart"] == "no" and migrate["healthcheck"] == {"disable": True}
    assert migrate["depends_on"]["db"]["condition"] == "service_healthy"
    assert services["worker"]["deploy"]["replicas"] == 2
    # The browser app: optional, on every address (password accounts only), checked over HTTP.
    web = services["web"]
    assert web["profiles"] == ["web"] and web["restart"] == "unless-stopped"
    assert web["command"][:3] == ["web", "--host", "0.0.0.0"]
    assert "http://127.0.0.1:8765/login" in " ".join(web["healthcheck"]["test"])
    assert environment(web) == environment(services["worker"]) | {
        "DEXTER_WEB_USERS_FILE": "/run/secrets/web_users"
    }


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_each_service_runs_a_real_dexter_command() -> None:
    from dexter.cli.main import _parser

    parser = _parser()
    known = _subcommands(parser)
    for name in DEXTER_SERVICES:
        command = compose()["services"][name]["command"]
        assert command[0] in known, f"{name}: `dexter {command[0]}` is no dexter command"
        args = parser.parse_args(command)  # exits (fails the test) on anything unknown
        assert args.command == command[0]


def test_no_secret_sits_in_the_compose_file() -> None:
    declared = compose()["secrets"]
    for name, secret in declared.items():
        assert set(secret) == {"file"} and secret["file"].startswith("./secrets/"), name
    for service_name, service in compose()["services"].items():
        for name, value in environment(service).items():
            if name.endswith("_FILE"):
                secret_name = value.removeprefix("/run/secrets/")
                assert value.startswith("/run/secrets/") and secret_name in declared
                assert secret_name in service["secrets"], f"{service_name}: {secret_name}"
            elif name == "DEXTER_DATABASE_URL":
                # The URL names the server; its password comes from DEXTER_DATABASE_PASSWORD_FILE.
                assert urlsplit(value).password is None, f"{service_name}: a password in the URL"
            else:
                assert not (is_secret_name(name) and value), f"{service_name}: {name} is inline"


def environment(
    service: Mapping[str, Any], values: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A service's environment as compose would pass it (`${VAR:-default}` / `${VAR:?error}`
    interpolated from `values`; the names as written when `values` is None)."""
    raw = service.get("environment", {})
    items = (
        [entry.partition("=")[::2] for entry in raw]
        if isinstance(raw, list)
        else [(k, "" if v is None else str(v)) for k, v in raw.items()]
    )
    if values is None:
        return {name: value for name, value in items}
    return {interpolate(name, values): interpolate(value, values) for name, value in items}


def interpolate(text: str, values: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        name, operator, argument = match.group(1), match.group(2), match.group(3) or ""
        value = values.get(name, "")
        if operator == ":?" and not value:
            raise AssertionError(f"compose would stop: {argument}")
        return value or (argument if operator == ":-" else "")

    return re.sub(r"\$\{([A-Z0-9_]+)(?:(:-|:\?)([^}]*))?\}", one, text)


def test_compose_refuses_to_start_without_a_sec_user_agent() -> None:
    with pytest.raises(AssertionError, match="DEXTER_SEC_USER_AGENT"):
        environment(compose()["services"]["worker"], {})


# -- the image's commands, run here -----------------------------------------------------------


def run_as_in_compose(
    args: list[str], tmp_path: Path, database_url: str, password: str = "unused"
) -> subprocess.CompletedProcess[str]:
    """`dexter ARGS` with a worker's environment from compose.yaml: its variables, its secret
    files (under tmp_path instead of /run/secrets) and its database swapped for `database_url`."""
    secrets = tmp_path / "run-secrets"
    secrets.mkdir(exist_ok=True)
    (secrets / "postgres_password").write_text(password + "\n")
    (secrets / "model_api_key").write_text("sk-container-test-0123456789\n")
    env = environment(
        compose()["services"]["worker"],
        {"DEXTER_SEC_USER_AGENT": "Team Test team@example.com"},
    )
    env = {
        name: value.replace("/run/secrets", str(secrets)) if name.endswith("_FILE") else value
        for name, value in env.items()
    }
    env["DEXTER_DATABASE_URL"] = database_url
    dexter = Path(sys.executable).with_name("dexter")
    return subprocess.run(
        [str(dexter), *args],
        env={**os.environ, **env, "DEXTER_HOME": str(tmp_path / "var-lib-dexter")},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_migrate_service_then_the_health_check_against_a_real_postgres(
    postgres_url: str, tmp_path: Path
) -> None:
    """The one-shot service's command and every service's health check, as compose runs them."""
    migrate = compose()["services"]["migrate"]["command"]
    result = run_as_in_compose(migrate, tmp_path, postgres_url)
    assert result.returncode == 0, result.stderr
    result = run_as_in_compose(HEALTH[1:], tmp_path, postgres_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("healthy: postgresql://")


def test_the_health_check_fails_clearly_when_the_database_is_down(tmp_path: Path) -> None:
    result = run_as_in_compose(
        HEALTH[1:], tmp_path, "postgresql://dexter@127.0.0.1:9/dexter", password="pw-hidden-9"
    )
    assert result.returncode == 1
    assert result.stderr.startswith("unhealthy: Cannot connect to the database at")
    assert "pw-hidden-9" not in result.stderr + result.stdout


def test_the_image_entrypoint_answers_version() -> None:
    dexter = Path(sys.executable).with_name("dexter")
    result = subprocess.run([str(dexter), "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "dexter" in result.stdout.lower()


def test_the_health_check_in_single_user_mode_creates_nothing(tmp_path: Path) -> None:
    from dexter.cli.health import run_health

    home = Path(os.environ["DEXTER_HOME"])
    assert run_health() == 0
    assert not (home / "dexter.db").exists()
    # And with a real database in the home, it is read (read-only) and healthy.
    from dexter.store import open_store

    open_store(home).close()
    assert run_health() == 0


def test_the_health_check_fails_on_a_damaged_database_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from dexter.cli.health import run_health

    home = Path(os.environ["DEXTER_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "dexter.db").write_bytes(b"this is not a database, it is a truncated copy" * 100)
    assert run_health() == 1
    assert "unhealthy: cannot read" in capsys.readouterr().err
