"""The one place that builds agents.

Every entry point (the CLI, the interactive session, the gateway, schedules, the MCP server,
evals) opens a `Runtime` and asks it for agents described by an `AgentSpec`. The runtime owns
what agents share for its lifetime (the SQLite store and ledger, the data router, the memory
index, one model client per endpoint) and closes each of them once.

    async with Runtime(settings) as rt:
        agent = rt.agent(AgentSpec(channel=CRON, model="openai:gpt-5.6-sol"))
        async for event in agent.run("Did NVDA file its 10-Q?"):
            ...

What differs between entry points is the `Channel`: whether a person can be asked questions,
whether the shell tool is bound, whether writes and memory updates are offered, and which
prompt profile the system prompt uses. No module above this one checks channel names.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from dexter.config import ConfigError, Settings, load_settings
from dexter.principal import OPERATOR, Principal

log = logging.getLogger("dexter.runtime")

if TYPE_CHECKING:
    import asyncio

    from dexter.agent.executor import Approver
    from dexter.agent.loop import Agent
    from dexter.agent.verification import VerifyMode
    from dexter.data.router import DataRouter
    from dexter.mcp.tools import McpToolset
    from dexter.memory.index import MemoryIndex
    from dexter.models.base import Model
    from dexter.models.phases import PhaseModels
    from dexter.models.recording import Sink
    from dexter.models.retry import RetryPolicy, Sleep
    from dexter.models.tuning import Sampling
    from dexter.permissions.gate import PermissionPolicy
    from dexter.providers import ResolvedModel
    from dexter.providers.probe import ServerReport
    from dexter.session import Session
    from dexter.store import Ledger, Store
    from dexter.store.writer import StoreWriter, Write
    from dexter.tools.ask_user import Ask
    from dexter.tools.base import Tool
    from dexter.tools.registry import ToolRegistry


# --------------------------------------------------------------------------- channels


@dataclass(frozen=True)
class Channel:
    """Who is on the other end of a run, and so what the agent may do.

    `prompt` names a profile in `dexter.agent.prompts.PROFILES`.
    """

    name: str
    can_ask_user: bool
    allows_shell: bool
    allows_writes: bool
    memory_writes: bool
    prompt: str
    description: str
    # Whether the user's remembered facts are loaded into the prompt (and memory tools bound).
    # Benchmark runs must not depend on whoever's machine they run on.
    memory_reads: bool = True
    # Whether the `cron` and `heartbeat` tools are offered (someone who can approve a schedule
    # is on the other end, now or through a rule).
    schedules: bool = False


CLI = Channel(
    "cli",
    can_ask_user=True,
    allows_shell=True,
    allows_writes=True,
    memory_writes=True,
    prompt="cli",
    schedules=True,
    description="the interactive terminal session",
)
ASK = Channel(
    "ask",
    can_ask_user=False,
    allows_shell=True,
    allows_writes=True,
    memory_writes=True,
    prompt="cli",
    schedules=True,
    description="`dexter ask`: one question; approvals prompted on a terminal only",
)
GATEWAY = Channel(
    "gateway",
    can_ask_user=False,
    allows_shell=False,
    allows_writes=False,
    memory_writes=True,
    prompt="chat",
    schedules=True,
    description="messaging channels (Telegram, WhatsApp, Slack)",
)
CRON = Channel(
    "cron",
    can_ask_user=False,
    allows_shell=False,
    allows_writes=False,
    memory_writes=False,
    prompt="cli",
    description="scheduled jobs and heartbeats, with nobody watching",
)
MCP = Channel(
    "mcp",
    can_ask_user=False,
    allows_shell=False,
    allows_writes=False,
    memory_writes=False,
    prompt="cli",
    description="the `research` tool of `dexter mcp serve`",
)
OPENBB = Channel(
    "openbb",
    can_ask_user=False,
    allows_shell=False,
    allows_writes=False,
    memory_writes=False,
    prompt="workspace",
    description="OpenBB Workspace's chat panel (the custom-agent endpoint of `dexter web`)",
)
WEB = Channel(
    "web",
    can_ask_user=True,
    allows_shell=True,
    allows_writes=True,
    memory_writes=True,
    prompt="web",
    schedules=True,
    description="`dexter web`: the browser app; approvals and questions answered on the page",
)
EVAL = Channel(
    "eval",
    can_ask_user=False,
    allows_shell=False,
    allows_writes=False,
    memory_writes=False,
    prompt="research",
    description="benchmark runs: isolated, nothing to ask, no memory, research answer profile",
    memory_reads=False,
)

CHANNELS: Mapping[str, Channel] = {
    c.name: c for c in (CLI, ASK, GATEWAY, CRON, MCP, OPENBB, WEB, EVAL)
}

# Tools that change files or memory: bound only where the channel allows writes.
WRITE_TOOLS = frozenset({"write_file", "edit_file"})
MEMORY_WRITE_TOOLS = frozenset({"memory_update"})
# Bound where the channel allows them, but offered to the model only once it loads them
# (`load_tools`), as are MCP servers' tools: a schema costs its characters on every request, and
# a research question rarely needs a screen of every filer, a shell, a browser or a schedule.
# The data, search, fetch, arithmetic, recall and file-reading tools most questions need are
# always offered.
ON_REQUEST = frozenset(
    {
        "stock_screener",
        "write_file",
        "edit_file",
        "bash",
        "browser",
        "memory_get",
        "memory_update",
        "cron",
        "heartbeat",
        "watch",
        "spawn_subagent",
        "ask_user_question",
        "workspace_map",
        "find_symbol",
        "related",
    }
)


def channel_named(name: str) -> Channel:
    """The channel called `name`, or a ConfigError that suggests the closest one."""
    found = CHANNELS.get(name.strip().lower())
    if found is not None:
        return found
    close = difflib.get_close_matches(name, list(CHANNELS), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"unknown channel {name!r}.{hint} Channels: {', '.join(CHANNELS)}.")


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class AgentSpec:
    """Everything that distinguishes one agent from another; plain data, so a schedule or a
    chat can store it (`to_dict` / `from_dict`).

    `tools`: bind only these tool names (None: everything the channel allows); `exclude_tools`
    removes names after that. `resume`: a session id or prefix, or "latest"; None starts a new
    session. `as_of`: research as of that date (the prompt's date; the data layer stops there).
    """

    model: str | None = None
    channel: Channel = CLI
    max_iterations: int | None = None
    resume: str | None = None
    tools: frozenset[str] | None = None
    exclude_tools: frozenset[str] = frozenset()
    as_of: date | None = None
    # Where alerts of jobs this agent schedules go ("telegram:CHAT" for a chat); None: outbox.
    delivery_target: str | None = None
    # Whose data the run may touch: their sessions, memory, jobs, granted folders.
    principal: Principal = OPERATOR
    # Text in the question written by someone other than the asker (a group's recent
    # messages): the run starts as one that has read outside text.
    untrusted_context: bool = False
    # Sampling for every model call of the run (None: the server's default), and whether
    # calls are answered from the response cache when the identical request was made before
    # (evaluations: a rerun of an unchanged question costs nothing).
    temperature: float | None = None
    seed: int | None = None
    cache_responses: bool = False
    # How the answer's figures are checked: "off", "flag" or "repair"; None: the settings'
    # (`verify_mode`). `dexter ask --no-verify` sets "off".
    verify: VerifyMode | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "channel": self.channel.name,
            "max_iterations": self.max_iterations,
            "resume": self.resume,
            "tools": sorted(self.tools) if self.tools is not None else None,
            "exclude_tools": sorted(self.exclude_tools),
            "as_of": self.as_of.isoformat() if self.as_of else None,
            "delivery_target": self.delivery_target,
            "principal": self.principal.id,
            "untrusted_context": self.untrusted_context,
            "temperature": self.temperature,
            "seed": self.seed,
            "cache_responses": self.cache_responses,
            "verify": self.verify,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentSpec:
        tools = data.get("tools")
        as_of = data.get("as_of")
        principal = data.get("principal") or OPERATOR.id
        if principal != OPERATOR.id:
            # Grants live in configuration, not in a stored spec: resolve them afresh.
            raise ConfigError(
                f"a stored agent spec for {principal!r} must be rebuilt with its principal"
            )
        return cls(
            model=data.get("model"),
            channel=channel_named(str(data.get("channel") or "cli")),
            max_iterations=data.get("max_iterations"),
            resume=data.get("resume"),
            tools=frozenset(tools) if tools is not None else None,
            exclude_tools=frozenset(data.get("exclude_tools") or ()),
            as_of=date.fromisoformat(as_of) if as_of else None,
            delivery_target=data.get("delivery_target"),
            untrusted_context=bool(data.get("untrusted_context")),
            temperature=data.get("temperature"),
            seed=data.get("seed"),
            cache_responses=bool(data.get("cache_responses")),
            verify=_verify_or_none(data.get("verify")),
        )


def _verify_or_none(raw: object) -> VerifyMode | None:
    if raw is None:
        return None
    from dexter.agent.verification import parse_verify_mode

    try:
        return parse_verify_mode(str(raw), "a stored agent spec's verify")
    except ValueError as error:
        raise ConfigError(str(error)) from None


def verify_mode(settings: Settings) -> VerifyMode:
    """How every answer's figures are checked: DEXTER_VERIFY, else `"verify"` in settings.json,
    else "repair"."""
    from dexter.agent.verification import DEFAULT_VERIFY_MODE, parse_verify_mode
    from dexter.settings_model import TopLevel

    raw = settings.env.get("DEXTER_VERIFY", "").strip()
    if raw:
        try:
            return parse_verify_mode(raw, "DEXTER_VERIFY")
        except ValueError as error:
            raise ConfigError(f"{error}.") from None
    return settings.section(TopLevel).verify or DEFAULT_VERIFY_MODE


# --------------------------------------------------------------------------- phase models

PhaseSource = Literal["configured", "provider", "main"]


@dataclass(frozen=True)
class PhasePlan:
    """Which model one phase calls and why (shown by `dexter doctor`)."""

    phase: str
    spec: str
    source: PhaseSource
    reason: str


def router_override(settings: Settings) -> str | None:
    from dexter.settings_model import TopLevel

    configured = settings.env.get("DEXTER_ROUTER_MODEL") or settings.section(TopLevel).router_model
    return configured.strip() or None if configured else None


def fast_model_plan(settings: Settings, resolved: ResolvedModel) -> PhasePlan:
    """The model for the router, compaction, constraint and memory phases.

    An explicitly configured router model wins. Otherwise the provider's own fast model, but only
    at the provider's own endpoint: a local or proxied server (LM Studio, vLLM, llama.cpp behind
    OPENAI_BASE_URL) usually serves one model, so there the main model does every phase.
    """
    from dexter.providers import fast_model_spec

    configured = router_override(settings)
    if configured:
        return PhasePlan(
            "router", configured, "configured", "DEXTER_ROUTER_MODEL / routerModel setting"
        )
    provider = resolved.provider
    main_spec = f"{provider.id}:{resolved.model_name}"
    if resolved.base_url_source != "default":
        return PhasePlan(
            "router",
            main_spec,
            "main",
            f"custom endpoint ({resolved.base_url_source}) may not serve "
            f"{provider.fast_model or 'a fast model'}; using the main model",
        )
    spec = fast_model_spec(resolved)
    if spec == main_spec:
        return PhasePlan("router", spec, "main", "the provider has no separate fast model")
    return PhasePlan("router", spec, "provider", f"{provider.display_name}'s fast model")


def window_of(resolved: ResolvedModel) -> int:
    from dexter.providers.discovery import context_window

    provider = resolved.provider
    return context_window(
        provider.id,
        resolved.model_name,
        resolved.context_window,
        overrides=provider.model_context_windows,
    )


def openrouter_probe(resolved: ResolvedModel) -> Callable[[], Awaitable[int | None]] | None:
    """OpenRouter routes to models of every size; its listing says each one's window."""
    if resolved.provider.id != "openrouter" or resolved.base_url_source != "default":
        return None

    async def probe() -> int | None:
        from dexter.providers.discovery import discover_context_window

        return await discover_context_window(
            resolved.provider.id, resolved.base_url, resolved.model_name, api_key=resolved.api_key
        )

    return probe


Toolset = Callable[["Runtime", AgentSpec], "Iterable[Tool[Any]]"]


def _no_sink(_record: object) -> None:
    return None


# --------------------------------------------------------------------------- the runtime


@dataclass
class Runtime:
    """Owns the store, ledger, data router, memory index and model clients of one process (or
    one long-lived service), and builds every agent. Resources open lazily on first use."""

    settings: Settings = field(default_factory=load_settings)
    # How retries wait (the one seam for time: tests pass an instant one); None: asyncio.sleep.
    sleep: Sleep | None = None
    # Tools that live above the runtime (schedules), handed in by the front door that builds
    # it: each is asked for its tools for every spec, and offers none where the spec's channel
    # does not want them.
    toolsets: tuple[Toolset, ...] = ()
    _retry: RetryPolicy | None = field(default=None, init=False, repr=False)
    _store: Store | None = field(default=None, init=False, repr=False)
    _writer: StoreWriter | None = field(default=None, init=False, repr=False)
    # Set at close: records that neither the database nor its journal took (a full disk), and
    # why, so the front door can say the answer was not saved instead of losing it quietly.
    unsaved: list[Write] = field(default_factory=list, init=False, repr=False)
    unsaved_error: OSError | None = field(default=None, init=False, repr=False)
    _ledger: Ledger | None = field(default=None, init=False, repr=False)
    _data_router: DataRouter | None = field(default=None, init=False, repr=False)
    # Routers for agents researching as of a past day (AgentSpec.as_of), one per day.
    _dated_routers: dict[date, DataRouter] = field(default_factory=dict, init=False, repr=False)
    _memory: MemoryIndex | None = field(default=None, init=False, repr=False)
    _memory_opened: bool = field(default=False, init=False, repr=False)
    # Every other principal's memory index, opened on first use and kept for the lifetime.
    _principal_memory: dict[str, MemoryIndex] = field(default_factory=dict, init=False, repr=False)
    _clients: dict[str, Model] = field(default_factory=dict, init=False, repr=False)
    # What each server behind a base URL turned out to be, asked once per process.
    _servers: dict[str, ServerReport] = field(default_factory=dict, init=False, repr=False)
    _probing: dict[str, asyncio.Future[ServerReport]] = field(
        default_factory=dict, init=False, repr=False
    )
    # Cache writes under way off the event loop (kept so they are not collected midway).
    _pending: set[asyncio.Task[None]] = field(default_factory=set, init=False, repr=False)
    _mcp: McpToolset | None = field(default=None, init=False, repr=False)
    _closed: bool = field(default=False, init=False, repr=False)

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close everything this runtime opened, once."""
        if self._closed:
            return
        self._closed = True
        if self._data_router is not None:
            await self._data_router.aclose()
        for router in self._dated_routers.values():
            await router.aclose()
        if self._mcp is not None:
            await self._mcp.aclose()
        for task in list(self._pending):
            await task
        # A pooled keep-alive socket left for the garbage collector outlives the event loop.
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            close = getattr(client, "aclose", None)
            if close is not None:
                await close()
        self.close_local()

    def close_local(self) -> None:
        """Close the synchronous resources (store writer, store, memory index); safe to call
        twice. Records a busy database kept from being written go to the journal."""
        if self._writer is not None:
            self._writer.close()
            self.unsaved += self._writer.unsaved()
            self.unsaved_error = self._writer.failure or self.unsaved_error
            self._writer = None
        if self._memory is not None:
            self._memory.close()
            self._memory = None
        for index in self._principal_memory.values():
            index.close()
        self._principal_memory.clear()
        if self._store is not None:
            self._store.close()
            self._store = None

    # ------------------------------------------------------------------ shared resources

    @property
    def database_url(self) -> str | None:
        """The Postgres database of team mode; None: the SQLite file in the home."""
        from dexter.store.database_url import database_target

        return database_target(self.settings).url

    @property
    def store(self) -> Store:
        if self._store is None:
            from dexter.store import open_store

            self._store = open_store(self.settings.home, url=self.database_url)
            self._replay_journal(self._store)
        return self._store

    def _replay_journal(self, store: Store) -> None:
        from dexter.store.prices import overrides_from_settings
        from dexter.store.writer import replay_journal

        try:
            replay_journal(store, self.settings.home, overrides_from_settings(self.settings))
        except Exception:  # the journal is kept for next time; it must not stop this command
            log.debug("journal replay failed", exc_info=True)

    @property
    def writer(self) -> StoreWriter:
        """Where agents' session and ledger records go: off the event loop, never lost."""
        if self._writer is None:
            from dexter.store.prices import overrides_from_settings
            from dexter.store.writer import StoreWriter

            self._writer = StoreWriter(
                self.settings.home,
                overrides_from_settings(self.settings),
                database_url=self.database_url,
            )
        return self._writer

    def existing_store(self) -> Store | None:
        """The store if a database exists already; read-only commands create nothing."""
        if self._store is None:
            from dexter.store import open_store

            try:
                self._store = open_store(self.settings.home, create=False, url=self.database_url)
            except FileNotFoundError:
                return None
        return self._store

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            from dexter.store import Ledger, overrides_from_settings

            self._ledger = Ledger(self.store, overrides_from_settings(self.settings))
        return self._ledger

    def as_of(self, spec: AgentSpec) -> date | None:
        """The day an agent researches as of: the spec's, else DEXTER_AS_OF / `asOf`."""
        if spec.as_of is not None:
            return spec.as_of
        from dexter.data.errors import DataError
        from dexter.data.settings import as_of_from_settings

        try:
            return as_of_from_settings(self.settings)
        except DataError as error:
            raise ConfigError(str(error)) from None

    def data_router_for(self, as_of: date | None) -> DataRouter:
        """The router for an agent: the shared one, or for `as_of` one whose providers drop
        everything filed after that day (filings, XBRL facts, documents, full-text search)."""
        if as_of is None or as_of == self.data_router.as_of:
            return self.data_router
        router = self._dated_routers.get(as_of)
        if router is None:
            from dexter.data.errors import DataError
            from dexter.data.sources import build_router

            try:
                router = build_router(self.settings, as_of=as_of)
            except DataError as error:
                raise ConfigError(str(error)) from None
            self._dated_routers[as_of] = router
        return router

    @property
    def data_router(self) -> DataRouter:
        if self._data_router is None:
            from dexter.data.errors import DataError
            from dexter.data.sources import build_router

            try:
                self._data_router = build_router(self.settings)
            except DataError as error:
                raise ConfigError(str(error)) from None
        return self._data_router

    @property
    def memory(self) -> MemoryIndex | None:
        if not self._memory_opened:
            from dexter.memory.setup import open_memory

            self._memory_opened = True
            self._memory = open_memory(self.settings)
        return self._memory

    def memory_for(self, principal: Principal) -> MemoryIndex | None:
        """The principal's own memory (MEMORY.md, daily notes, index) under their folder; the
        operator's is the home's. None when memory is off."""
        if principal.is_operator:
            return self.memory
        found = self._principal_memory.get(principal.id)
        if found is None:
            shared = self.memory  # its embedder serves every principal
            if shared is None:
                return None
            from dexter.memory.index import MemoryIndex

            found = MemoryIndex(principal.home(self.settings.home), shared.embedder)
            self._principal_memory[principal.id] = found
        return found

    def policy(
        self, principal: Principal = OPERATOR, *, bound_tools: frozenset[str] | None = None
    ) -> PermissionPolicy:
        """The permission gate every tool call passes: the floor that nothing overrides, the
        settings rules and the shell classifier; for anyone but the operator, inside that
        principal's grants first (see `dexter.permissions.principal_policy`), refusing any tool
        outside `bound_tools` when given."""
        from dexter.permissions.policy import RulesPolicy

        rules = RulesPolicy(self.settings.settings_path, self.settings.cwd)
        if principal.is_operator:
            return rules
        return self._within_grants(principal, rules, bound_tools)

    def _within_grants(
        self, principal: Principal, inner: PermissionPolicy, bound_tools: frozenset[str] | None
    ) -> PermissionPolicy:
        from dexter.permissions.principal_policy import OWN_RULES_FILE, PrincipalPolicy

        return PrincipalPolicy(
            principal,
            inner,
            own_rules=principal.home(self.settings.home) / OWN_RULES_FILE,
            bound_tools=bound_tools,
            private=(self.settings.home,),
        )

    def memory_for_commands(self) -> tuple[MemoryIndex, str]:
        """The memory index with its embedder loaded eagerly (for `dexter memory …`, which
        reports the embedding model), and how that embedder was chosen."""
        from dexter.memory.embeddings import load_embedder
        from dexter.memory.index import MemoryIndex

        embedder, how = load_embedder(self.settings)
        return MemoryIndex(self.settings.home, embedder), how

    # ------------------------------------------------------------------ models

    def resolve(self, spec: str | None) -> ResolvedModel:
        from dexter.providers import resolve_model

        return resolve_model(spec, self.settings)

    def client(self, spec: str | None) -> Model:
        """The model client for `spec`, one per provider:model for the runtime's lifetime."""
        resolved = self.resolve(spec)
        key = resolved.spec
        model = self._clients.get(key)
        if model is None:
            from dexter.providers import build_model

            model = self._clients[key] = build_model(key, self.settings)
        return model

    async def server_report(self, resolved: ResolvedModel, *, fresh: bool = False) -> ServerReport:
        """What the server behind `resolved`'s base URL is and what window it runs the model at:
        asked once per process (runs starting together share one probe), and remembered under
        DEXTER_HOME for a day (`fresh`: ask the server again, as `dexter doctor --check` does).
        A server that could not be asked is asked again by the next run."""
        import asyncio

        from dexter.providers.probe import ProbeCache

        key = ProbeCache.key(resolved.base_url, resolved.model_name)
        if not fresh and key in self._servers:
            return self._servers[key]
        probing = self._probing.get(key)
        if probing is None:
            probing = asyncio.ensure_future(self._ask_server(resolved, fresh=fresh))
            self._probing[key] = probing
            probing.add_done_callback(lambda _: self._probing.pop(key, None))
        # Shielded: a run cancelled while waiting must not cancel the probe other runs share.
        report = await asyncio.shield(probing)
        if report.problem is None:
            self._servers[key] = report
        return report

    async def _ask_server(self, resolved: ResolvedModel, *, fresh: bool) -> ServerReport:
        import asyncio

        from dexter.providers.probe import ProbeCache, probe_server
        from dexter.providers.profiles import static_profile

        cache = ProbeCache(self.settings.home)
        cached = await asyncio.to_thread(cache.get, resolved.base_url, resolved.model_name)
        if cached is not None and not fresh:
            return cached
        hint = static_profile(resolved).server_kind
        report = await probe_server(
            resolved.base_url,
            resolved.model_name,
            api_key=resolved.api_key,
            protocol=resolved.protocol,
            hint=None if hint in ("generic", "openai", "anthropic") else hint,
        )
        if report.context_window is None and cached is not None and cached.kind == report.kind:
            # A window learned from the server's own overflow refusal (llama-cpp-python states
            # it nowhere else) outlives a fresh look, such as `dexter doctor --check`.
            report = replace(report, context_window=cached.context_window)
        if report.problem is None:
            await asyncio.to_thread(cache.put, resolved.base_url, resolved.model_name, report)
        return report

    def _server_probe(
        self, resolved: ResolvedModel, client: Model
    ) -> Callable[[], Awaitable[int | None]] | None:
        """For a server the user runs (any base URL of their own, and Ollama): before the
        model's first run, learn what the server is, switch the client to its profile, and give
        the window it stated (None when the settings state one, which then stands)."""
        from dexter.providers.profiles import probed_profile, should_probe

        if not should_probe(resolved):
            return openrouter_probe(resolved)
        self._learn_windows(resolved, client)

        async def probe() -> int | None:
            report = await self.server_report(resolved)
            profile = probed_profile(resolved, report)
            use_profile = getattr(client, "use_profile", None)
            if callable(use_profile):
                use_profile(profile)
            if resolved.provider.configured_window(resolved.model_name) is not None:
                return None
            return profile.context_window

        return probe

    def _learn_windows(self, resolved: ResolvedModel, client: Model) -> None:
        """When the server states its window in an overflow refusal (llama-cpp-python states
        it nowhere else), remember it with the probe's answer for the next process."""
        if not hasattr(client, "on_window_learned"):
            return

        def learned(window: int) -> None:
            import asyncio

            from dexter.providers.probe import ProbeCache

            key = ProbeCache.key(resolved.base_url, resolved.model_name)
            known = self._servers.get(key)
            if known is None or known.problem is not None:
                return
            report = replace(known, context_window=window)
            self._servers[key] = report
            cache = ProbeCache(self.settings.home)
            task = asyncio.get_running_loop().create_task(
                asyncio.to_thread(cache.put, resolved.base_url, resolved.model_name, report)
            )
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

        client.on_window_learned = learned

    @property
    def retry_policy(self) -> RetryPolicy:
        """The one retry policy (settings' `retry` section) every phase model is wrapped in."""
        if self._retry is None:
            import asyncio

            from dexter.models.retry import policy_from_settings

            self._retry = policy_from_settings(self.settings, self.sleep or asyncio.sleep)
        return self._retry

    def model(
        self,
        spec: str | None,
        *,
        phase: str = "main",
        sink: Sink | None = None,
        sampling: Sampling | None = None,
        cached: bool = False,
    ) -> Model:
        """A model for one phase, retried under the runtime's policy and recorded through
        `sink` (e.g. an eval judge's ledger); `sampling` and `cached` as in `tuned`."""
        from dexter.models.phases import retried_and_recorded

        client = self.tuned(spec, self.client(spec), sampling, cached)
        return retried_and_recorded(client, self.retry_policy, sink or _no_sink, phase)

    def tuned(
        self, spec: str | None, client: Model, sampling: Sampling | None, cached: bool
    ) -> Model:
        """`client` with `sampling` set on every request, answered from the response cache
        (in this runtime's store) when `cached`. The cache sits under the sampling, so the
        temperature and seed are part of each key."""
        from dexter.models.tuning import SampledModel

        model = client
        if cached:
            from dexter.models.cache import CachedModel
            from dexter.store.responses import ResponseCache

            resolved = self.resolve(spec)
            identity = f"{resolved.spec} at {resolved.base_url}"
            model = CachedModel(model, ResponseCache(self.store), identity)
        if sampling is not None and not sampling.is_default:
            model = SampledModel(model, sampling)
        return model

    def phase_plans(self, spec: str | None) -> list[PhasePlan]:
        """Which model each phase will call, for `dexter doctor`."""
        resolved = self.resolve(spec)
        main = resolved.spec
        fast = fast_model_plan(self.settings, resolved)
        plans = [PhasePlan("main", main, "configured", "the selected model")]
        for phase in ("router", "compaction", "constraints", "memory"):
            plans.append(replace(fast, phase=phase))
        plans.append(PhasePlan("subagent", main, "main", "sub-agents use the main model"))
        return plans

    def _phase_models(
        self,
        spec: str | None,
        sink: Sink,
        sampling: Sampling | None = None,
        cached: bool = False,
    ) -> PhaseModels:
        from dexter.models.phases import PhaseModels
        from dexter.models.tuning import Sampling

        resolved = self.resolve(spec)
        client = self.client(spec)
        main = self.tuned(spec, client, sampling, cached)
        plan = fast_model_plan(self.settings, resolved)
        fast: Model | None
        try:
            fast_client = self.client(plan.spec)
            # One server, one client: the fast phases share the main model's (tuned) client.
            fast = (
                main
                if fast_client is client
                else self.tuned(plan.spec, fast_client, sampling, cached)
            )
            fast_window: int | None = window_of(self.resolve(plan.spec))
        except ConfigError:
            # A configured router model on an unconfigured provider: summarise with the main
            # model, and let the data tools report the missing key when they are used.
            fast, fast_window = None, None
        return PhaseModels(
            main,
            fast,
            plan.spec,
            fast_window,
            sink,
            self.retry_policy,
            sampling or Sampling(),
            cached,
        )

    # ------------------------------------------------------------------ tools

    def data_tools(self) -> list[Tool[Any]]:
        """`calculate` and every data call the configured providers serve, each its own tool
        (what `dexter mcp serve` offers a host, whatever the agents' finance mode)."""
        from dexter.tools.finance.calculate import CalculateTool
        from dexter.tools.finance.datacalls import available_data_calls

        return [CalculateTool(), *available_data_calls(self.data_router)]

    def mcp_tools(self) -> list[Tool[Any]]:
        """The tools of the MCP servers under "mcpServers" in settings, as `server__tool`; each
        asks before it runs. Servers start on their first call; `mcp_errors` says which could
        not be listed."""
        if self._mcp is None:
            from dexter.mcp.config import mcp_servers

            configs = mcp_servers(self.settings)
            if not configs:
                return []
            from dexter.mcp.tools import McpToolset

            self._mcp = McpToolset(configs, home=self.settings.home)
        return self._mcp.tools()

    @property
    def mcp_errors(self) -> dict[str, str]:
        return dict(self._mcp.errors) if self._mcp is not None else {}

    def tools(
        self,
        spec: AgentSpec,
        *,
        ask_user: Ask | None = None,
        _session: Callable[[], Session] | None = None,
    ) -> ToolRegistry:
        """Exactly the tools an agent built from `spec` binds (what `dexter tools list` prints).

        `ask_user` is used only where the channel can ask a person; without it the question
        tool is still listed for such channels, since the session supplies one.
        """
        from dexter.tools.default import default_registry
        from dexter.tools.fs import EditFileTool, ReadFileTool, WriteFileTool
        from dexter.tools.registry import ToolRegistry
        from dexter.tools.shell import BashTool
        from dexter.tools.web import web_tools

        channel = spec.channel
        settings = self.settings
        session = _session

        def router_model() -> Model:
            # Asked at each call: the session's models follow a mid-session switch.
            if session is not None:
                models = session().models
                # No fast client: building it here raises the missing-key error for the tool.
                return models.fast_phase("router") or models.wrap(
                    self.client(models.fast_spec), "router"
                )
            plan = fast_model_plan(settings, self.resolve(spec.model))
            return self.model(plan.spec, phase="router")

        data_router = self.data_router_for(spec.as_of)
        registry = default_registry(settings, data_router=data_router, router_model=router_model)
        principal = spec.principal
        local: list[Tool[Any]] = []
        if principal.is_operator:
            workspace = settings.cwd
            local.append(ReadFileTool(workspace))
            if channel.allows_writes:
                local += [WriteFileTool(workspace), EditFileTool(workspace)]
            if channel.allows_shell:
                local.append(BashTool(workspace))
        else:
            # Anyone else sees only the folders the operator granted them, and never the shell
            # (it runs on the operator's machine).
            files = principal.grants.files
            if files.readable:
                local.append(ReadFileTool(files.readable[0]))
            if files.write:
                local += [WriteFileTool(files.write[0]), EditFileTool(files.write[0])]
        from dexter.tools.workspace import workspace_tools

        # The workspace map reads the same folders the file tools may (its index lives under
        # the home, so it sees only what reading would).
        roots = [settings.cwd] if principal.is_operator else list(principal.grants.files.readable)
        if roots:
            local += workspace_tools(roots, settings.home, data_router)
        for tool in [*local, *web_tools(settings, data_router)]:
            registry.register(tool)
        memory = self.memory_for(principal) if channel.memory_reads else None
        if memory is not None:
            from dexter.memory.tools import memory_tools

            for tool in memory_tools(memory):
                if channel.memory_writes or tool.name not in MEMORY_WRITE_TOOLS:
                    registry.register(tool)
        from dexter.skills import discover_skills

        skills = discover_skills(settings.home)
        if skills:
            from dexter.tools.skill import SkillTool

            registry.register(SkillTool(skills))
        if channel.can_ask_user:
            from dexter.tools.ask_user import AskUserTool

            registry.register(AskUserTool(ask_user))
        for toolset in self.toolsets:
            for tool in toolset(self, spec):
                registry.register(tool)
        for tool in self.mcp_tools():
            if tool.name not in registry:
                registry.register(tool)
        from dexter.agent.subagent import SubagentTool

        registry.register(SubagentTool(self._subagent_factory(spec, registry, session)))
        bound = _filtered(_for_principal(registry, principal, local), spec)
        if spec.tools is not None:
            return bound  # tools named one by one are all offered
        # Everything else is offered on request: the model loads it when a question needs it.
        lazy = set(ON_REQUEST) | {tool.name for tool in self.mcp_tools()}
        if memory is not None and not memory.files.list():
            lazy.add("memory_search")  # nothing remembered yet, so nothing to recall
        return ToolRegistry(bound, on_request=lazy)

    def _subagent_factory(
        self, spec: AgentSpec, parent: ToolRegistry, session: Callable[[], Session] | None
    ) -> Callable[[list[str] | None], Agent]:
        """The agent a sub-task starts from: in a session, the parent agent itself on the
        sub-agent phase of its current models (so a model switch reaches sub-agents too), which
        `SubagentTool` clones with its own restrictions; outside one (`dexter tools run`), a
        fresh agent over the channel's tools."""
        from dexter.agent.loop import Agent, AgentConfig
        from dexter.tools.registry import ToolRegistry

        settings = self.settings

        def make(names: list[str] | None) -> Agent:
            if session is not None:
                current = session()
                return current.agent.clone(model=current.models.phase("subagent"))
            chosen = [t for t in parent if names is None or t.name in names]
            model = self.model(spec.model, phase="subagent")
            config = AgentConfig(
                home=settings.home,
                max_iterations=8,
                channel=spec.channel.name,
                profile=spec.channel.prompt,
                today=self.as_of(spec),
                principal=spec.principal,
            )
            # The same rules as the parent; with nobody to ask, anything needing approval is
            # refused.
            return Agent(
                model,
                ToolRegistry(chosen),
                config=config,
                policy=self.policy(spec.principal),
                approver=None,
            )

        return make

    # ------------------------------------------------------------------ agents

    def agent(
        self,
        spec: AgentSpec | None = None,
        *,
        approver: Approver | None = None,
        ask_user: Ask | None = None,
        policy: PermissionPolicy | None = None,
        prompt_sections: tuple[str, ...] = (),
    ) -> Session:
        """A session for `spec`: an agent recording into this runtime's store and ledger.

        `approver` is who answers permission prompts (None: anything needing approval is
        refused, as it must be where nobody is watching). `policy` replaces the settings'
        rules (a chat wraps them); `prompt_sections` are added to the system prompt.
        """
        from dexter.agent.hooks import RunHooks
        from dexter.agent.loop import Agent, AgentConfig
        from dexter.models.tuning import Sampling
        from dexter.session import MemoryHooks, Session, SessionHooks, SessionRecorder, WindowHooks
        from dexter.tools.skill import SkillTool, skills_prompt

        spec = spec or AgentSpec()
        if spec.max_iterations is not None and spec.max_iterations < 1:
            raise ConfigError("max iterations must be at least 1")
        # A missing key or unknown model fails here, before the store exists: a failed run
        # leaves no database (or home folder) behind.
        self.client(spec.model)
        principal = spec.principal
        # Its first session records a principal on first contact.
        recorder = SessionRecorder(
            self.store, self.ledger, session_id="", writer=self.writer, principal=principal
        )
        models = self._phase_models(
            spec.model,
            recorder.record_model_call,
            Sampling(spec.temperature, spec.seed),
            spec.cache_responses,
        )
        resolved = self.resolve(spec.model)
        built: Session | None = None

        def current() -> Session:
            # The tools and hooks are built before the session that holds them; they only
            # call this once the session runs.
            assert built is not None, "the session is still being built"
            return built

        tools = self.tools(
            spec, ask_user=ask_user if spec.channel.can_ask_user else None, _session=current
        )
        config = AgentConfig(
            max_iterations=spec.max_iterations or self.settings.max_iterations,
            channel=spec.channel.name,
            profile=spec.channel.prompt,
            home=self.settings.home,
            context_window=window_of(resolved),
            fast_context_window=models.fast_window,
            today=self.as_of(spec),
            untrusted_context=spec.untrusted_context,
            principal=principal,
            verify=spec.verify or verify_mode(self.settings),
        )
        sections = list(prompt_sections)
        skill_tool = tools.get("skill")
        if isinstance(skill_tool, SkillTool):
            sections.insert(0, skills_prompt(list(skill_tool.skills.values())))
        session_hooks = SessionHooks(recorder)
        hooks: list[RunHooks] = [
            session_hooks,
            # A one-model server (every custom endpoint) does the fast phases with the same
            # client, so the window it states is the fast phases' window too.
            WindowHooks(
                lambda: current().window_probe,
                fast_follows=lambda: current().models.fast is current().models.main,
            ),
        ]
        memory = self.memory_for(principal) if spec.channel.memory_reads else None
        if memory is not None:
            hooks.append(MemoryHooks(memory, lambda: current().models.fast_or_main("memory")))
        gate = policy or self.policy()
        if not principal.is_operator:
            # Whatever policy the entry point chose, this principal's grants come first.
            gate = self._within_grants(principal, gate, frozenset(tools.names()))
        agent = Agent(
            models.phase("main"),
            tools,
            config=config,
            policy=gate,
            approver=approver,
            fast_model=models.fast_phase("compaction"),
            constraint_model=models.fast_phase("constraints"),
            prompt_sections=sections,
            hooks=hooks,
        )
        built = Session(
            agent,
            session_hooks,
            models,
            window_probe=self._server_probe(resolved, self.client(spec.model)),
        )
        if spec.resume is not None:
            built.resume(None if spec.resume == "latest" else spec.resume)
        else:
            built.new_session()
        return built

    def with_model(self, session: Session, spec: str) -> Model:
        """Switch `session` to `spec` mid-session: the main model, its context window, the fast
        model (unless one is configured explicitly), compaction, constraints, memory flushes,
        the routers and sub-agents all follow, and the ledger keeps recording under the same
        session. Returns the new main model."""
        resolved = self.resolve(spec)
        current = session.models
        fresh = self._phase_models(spec, current.sink, current.sampling, current.cached)
        return session.use_models(
            fresh,
            context_window=window_of(resolved),
            window_probe=self._server_probe(resolved, self.client(spec)),
        )


def _for_principal(
    registry: ToolRegistry, principal: Principal, files: list[Tool[Any]]
) -> ToolRegistry:
    """Only what `principal` may use: public and own-data tools, the file tools its grants
    bound, and operator tools it was granted by name."""
    if principal.is_operator:
        return registry
    from dexter.tools.registry import ToolRegistry

    bound = {id(tool) for tool in files}
    return ToolRegistry(
        [t for t in registry if id(t) in bound or principal.may_use_tool(t.name, t.scope)]
    )


def _filtered(registry: ToolRegistry, spec: AgentSpec) -> ToolRegistry:
    from dexter.tools.registry import ToolRegistry

    if spec.tools is None and not spec.exclude_tools:
        return registry
    if spec.tools is not None:
        unknown = sorted(spec.tools - set(registry.names()))
        if unknown:
            raise ConfigError(
                f"unknown tool(s) {', '.join(unknown)} for channel {spec.channel.name!r}. "
                f"Available: {', '.join(registry.names())}."
            )
    kept = [
        tool
        for tool in registry
        if (spec.tools is None or tool.name in spec.tools) and tool.name not in spec.exclude_tools
    ]
    return ToolRegistry(kept)


__all__ = [
    "ASK",
    "CHANNELS",
    "CLI",
    "CRON",
    "EVAL",
    "GATEWAY",
    "MCP",
    "OPENBB",
    "WEB",
    "AgentSpec",
    "Channel",
    "PhasePlan",
    "Runtime",
    "channel_named",
    "fast_model_plan",
    "verify_mode",
]
