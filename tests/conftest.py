from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Bytecode caches on, whatever the shell says. Under PYTHONDONTWRITEBYTECODE every xdist worker
# and every `dexter` subprocess compiles each module it imports from source again (about 0.8 s of
# CPU for a CLI process's imports, against 0.2 s from cached bytecode), and pytest rewrites every
# test module's asserts again (about 6 s a worker). The caches are __pycache__ folders, ignored by
# git; subprocesses inherit the setting through the environment.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# `postgres_url`: a fresh database on a real Postgres with pgvector, per test.
from tests.support.postgres import postgres_url  # noqa: E402, F401
from tests.support.wire_server import WireServer, running_server  # noqa: E402


@pytest.fixture
def wire_server() -> Iterator[WireServer]:
    yield from running_server()


def _environment_names() -> set[str]:
    """Every variable Dexter reads for keys and endpoints, from the registries themselves, so a
    new provider is isolated here without anyone editing this list."""
    from dexter.providers.registry import BUILTIN_PROVIDERS
    from dexter.tools.web.search import PROVIDER_CLASSES
    from dexter.tools.web.x_search import TOKEN_ENV

    names = {TOKEN_ENV, "FINANCIAL_DATASETS_API_KEY", "FINANCIAL_DATASETS_BASE_URL"}
    for provider in BUILTIN_PROVIDERS:
        names.update(n for n in (provider.api_key_env, provider.base_url_env) if n)
    names.update(cls.env_key for cls in PROVIDER_CLASSES)
    return names


_ENVIRONMENT_NAMES = _environment_names()
# What the developer's shell passed in. Only these values are removed, so a module-scoped
# fixture that set its own DEXTER_HOME or key for a group of tests keeps it.
_INHERITED = dict(os.environ)


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's keys, endpoints or Dexter settings, and each test's state
    lives in its own temporary home."""
    for name in list(os.environ):
        inherited = os.environ[name] == _INHERITED.get(name)
        # `OPENAI_API_KEY_FILE` too: Dexter reads a key from the file it names.
        known = name in _ENVIRONMENT_NAMES or name.removesuffix("_FILE") in _ENVIRONMENT_NAMES
        if inherited and (name.startswith("DEXTER_") or known):
            monkeypatch.delenv(name)
    if "DEXTER_HOME" not in os.environ:
        monkeypatch.setenv("DEXTER_HOME", str(tmp_path / ".dexter"))
    if os.environ.get("HOME") == _INHERITED.get("HOME"):
        # Tests that clear DEXTER_HOME fall back to the user-level home: keep it in tmp_path too.
        monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    # Key-less web search needs no key, so any agent a test builds from the environment binds it:
    # point it at a closed local port so that no test can ever reach the real search engine.
    monkeypatch.setenv("DEXTER_DUCKDUCKGO_BASE_URL", "http://127.0.0.1:9")
    # Key-less prices too (Yahoo Finance): bound everywhere, reachable nowhere.
    monkeypatch.setenv("DEXTER_YAHOO_URL", "http://127.0.0.1:9")


_LOOPBACK = {"127.0.0.1", "::1", "localhost", "0.0.0.0", "", None}


@pytest.fixture(autouse=True)
def _no_network_beyond_loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any name lookup of a host other than this machine fails at once (as on an offline
    machine), and the test that tried fails at its end naming the host: a test that reached for
    the real SEC or a real provider would otherwise pass slowly through retries, or not at all on
    a machine with a network."""
    import socket

    real = socket.getaddrinfo
    reached: list[str] = []

    def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in _LOOPBACK and not str(name).startswith("127."):
            reached.append(str(name))
            raise socket.gaierror(socket.EAI_NONAME, f"tests may not reach {name}")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    yield
    if reached:
        pytest.fail(f"the test tried to reach the network: {', '.join(sorted(set(reached)))}")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Why tests were skipped, each reason once with its count, above the closing line: "218
    skipped" alone does not say that the recorded SEC fixtures are missing (or a browser)."""
    from collections import Counter

    reasons: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else longrepr
        reasons[str(reason).removeprefix("Skipped: ").strip()] += 1
    if not reasons:
        return
    terminalreporter.write_sep("-", "why tests were skipped")
    for reason, count in reasons.most_common():
        terminalreporter.write_line(f"{count:>5} {reason}")


# Modules whose tests must all run on one xdist worker, as one group: the real-server tests
# share one llama.cpp server and one LiteLLM proxy per run; the finance unit set's per-area tests
# share one run of its thousand-odd cases (run on both workers, it would cost the suite twice);
# the browser tests of `dexter web` share one server and one Chromium. So are modules whose
# module-scoped fixtures do seconds of work (a research run, workbooks recalculated, the
# embedding model loaded, mirror servers): split across both workers, each worker would do it
# again. Started first (the scheduler sends bigger groups first), they leave the single tests to
# even out the workers' ends.
_ONE_WORKER_MODULES = tuple(
    f"tests/{name}.py::"
    for name in (
        "test_real_servers",
        "test_finance_units",
        "test_web_browser",
        "test_web_views",
        "test_figure_answers",
        "test_model_comps",
        "test_model_dcf",
        "test_model_three_statement",
        "test_model_from_session",
        "test_reports",
        "test_sec_segments",
        "test_memory_embeddings",
        "test_memory_tools",
        "test_eval_splits",
        "test_eval_repeatable",
        "test_verification_e2e",
        "test_watch",
        "test_openbb",
        "test_store_contract",
        "test_workspace",
    )
)


# Modules with single tests of several seconds (processes, Chromium, a sandboxed corpus, a store
# held locked), not grouped: moved to the front of the collection so that the scheduler, which
# hands out the groups first and then single tests in collection order, starts them early and
# leaves the quick tests to even out the workers' ends. Left where they are alphabetically, the
# 50-message worker test (13 s) was among the last to start and ended the run alone.
_EARLY_MODULES = tuple(
    f"tests/{name}.py::"
    for name in (
        "test_work_process",
        "test_interactive_app",
        "test_browser",
        "test_browser_guard",
        "test_store_busy",
        "test_sandbox",
        "test_mcp_client",
        "test_shell_corpus",
        "test_sec_shared_limit",
        "test_install",
    )
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not item.nodeid.startswith(_EARLY_MODULES))


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup`, with each of `_ONE_WORKER_MODULES` as one group.

    pytest-xdist 3.8 marks an `xdist_group` by renaming items through `_nodeid`, which pytest 9
    no longer reads, so its groups fall apart; grouping by module here does not depend on it."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class ModuleGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            for module in _ONE_WORKER_MODULES:
                if nodeid.startswith(module):
                    return module
            return str(super()._split_scope(nodeid))

    return ModuleGroups(config, log)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: one worker more than this process may use cores. Much of the suite waits rather
    than computes (subprocesses starting, servers answering, Chromium rendering, the llama.cpp
    server evaluating a prompt while its test waits), so with one worker a core the cores sit
    idle for part of the run (2 workers on 2 cores: 236 s of CPU in 224 s); a third worker fills
    those gaps (141 s). A fourth gained nothing more. PYTEST_XDIST_AUTO_NUM_WORKERS still wins."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1
