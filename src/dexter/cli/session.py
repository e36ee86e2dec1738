"""Assemble a research session from settings: models (recorded in the ledger), data sources,
tools, context windows, the stored session (new or resumed)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from dexter.agent.executor import Approver
from dexter.agent.loop import Agent, AgentConfig
from dexter.config import ConfigError, Settings
from dexter.data.errors import DataError
from dexter.data.router import DataRouter
from dexter.memory.index import MemoryIndex
from dexter.memory.setup import open_memory
from dexter.memory.tools import memory_tools
from dexter.models.base import Model
from dexter.models.recording import RecordingModel
from dexter.permissions.policy import RulesPolicy
from dexter.providers import ResolvedModel, build_model, fast_model_spec, resolve_model
from dexter.providers.discovery import context_window, discover_context_window
from dexter.session import SessionAgent, SessionRecorder
from dexter.skills import discover_skills
from dexter.store import Ledger, open_store, overrides_from_settings
from dexter.tools.ask_user import Ask, AskUserTool
from dexter.tools.base import Tool
from dexter.tools.default import default_registry
from dexter.tools.finance.routed import ModelFactory
from dexter.tools.fs import EditFileTool, ReadFileTool, WriteFileTool
from dexter.tools.registry import ToolRegistry
from dexter.tools.shell import BashTool
from dexter.tools.skill import SkillTool, skills_prompt
from dexter.tools.subagent import SubagentTool


def router_model_spec(settings: Settings, model_spec: str | None) -> str:
    """The model that plans data calls and writes summaries: DEXTER_ROUTER_MODEL or
    `routerModel`, else the main model's provider's fast model (the same key serves both)."""
    configured = settings.env.get("DEXTER_ROUTER_MODEL") or settings.file_data.get("routerModel")
    if configured:
        return str(configured).strip()
    return fast_model_spec(resolve_model(model_spec, settings))


def build_data_router(settings: Settings) -> DataRouter:
    from dexter.data.sources import build_router

    try:
        return build_router(settings)
    except DataError as error:
        raise ConfigError(str(error)) from None


def build_tools(
    settings: Settings,
    model_spec: str | None,
    *,
    router_model: ModelFactory | None = None,
    channel: str = "cli",
    ask_user: Ask | None = None,
    subagent_model: Model | None = None,
    memory: MemoryIndex | None = None,
) -> tuple[ToolRegistry, DataRouter]:
    """Every tool this configuration offers. `ask_user` is given only where a person can answer;
    the shell tool only on the command line; sub-agents only when a model for them is given."""
    data_router = build_data_router(settings)
    if router_model is None:
        spec = router_model_spec(settings, model_spec)

        def router_model() -> Model:
            return build_model(spec, settings)

    registry = default_registry(settings, data_router=data_router, router_model=router_model)
    workspace = settings.cwd
    local: list[Tool[Any]] = [
        ReadFileTool(workspace),
        WriteFileTool(workspace),
        EditFileTool(workspace),
    ]
    if channel == "cli":
        local.append(BashTool(workspace))
    for tool in [*local, *web_tools(settings)]:
        registry.register(tool)
    if memory is not None:
        for tool in memory_tools(memory):
            registry.register(tool)
    skills = discover_skills(settings.home)
    if skills:
        registry.register(SkillTool(skills))
    if ask_user is not None:
        registry.register(AskUserTool(ask_user))
    if subagent_model is not None:
        registry.register(SubagentTool(subagent_factory(settings, subagent_model, registry)))
    return registry, data_router


def web_tools(settings: Settings) -> list[Tool[Any]]:
    from dexter.tools.web.fetch import WebFetchTool
    from dexter.tools.web.search import WebSearchTool, search_providers_from_settings

    tools: list[Tool[Any]] = []
    providers = search_providers_from_settings(settings)
    if providers:
        tools.append(WebSearchTool(providers))
    web = settings.file_data.get("webFetch") or {}
    allowed = frozenset(str(h) for h in (web.get("allowedHosts") or []))
    tools.append(WebFetchTool(allowed_hosts=allowed, cache_dir=settings.home / "cache" / "web"))
    return tools


def subagent_factory(
    settings: Settings, model: Model, parent: ToolRegistry
) -> Callable[[list[str] | None], Agent]:
    """A fresh, isolated agent per sub-task, over a subset of the parent's tools."""

    def make(names: list[str] | None) -> Agent:
        chosen = [t for t in parent if names is None or t.name in names]
        config = AgentConfig(home=settings.home, max_iterations=8)
        # The same rules as the parent; with nobody to ask, anything needing approval is refused.
        policy = RulesPolicy(settings.settings_path, settings.cwd)
        return Agent(model, ToolRegistry(chosen), config=config, policy=policy, approver=None)

    return make


def window_of(resolved: ResolvedModel) -> int:
    provider = resolved.provider
    return context_window(
        provider.id,
        resolved.model_name,
        resolved.context_window,
        overrides=provider.model_context_windows,
    )


def window_probe(resolved: ResolvedModel) -> Callable[[], Awaitable[int | None]] | None:
    """For servers that can say their model's window (Ollama, OpenRouter): ask once, lazily."""
    if not resolved.provider.id.startswith(("ollama", "openrouter")):
        return None

    async def probe() -> int | None:
        return await discover_context_window(
            resolved.provider.id, resolved.base_url, resolved.model_name, api_key=resolved.api_key
        )

    return probe


def build_agent(
    settings: Settings,
    model_spec: str | None,
    *,
    approver: Approver | None = None,
    max_iterations: int | None = None,
    channel: str = "cli",
    resume: str | None = None,
    ask_user: Ask | None = None,
) -> tuple[SessionAgent, DataRouter]:
    """The session's agent and the data router it uses (close the router when done).

    `resume`: a session id or prefix, or "latest"; None starts a new session.
    """
    store = open_store(settings.home)
    ledger = Ledger(store, overrides_from_settings(settings))
    recorder = SessionRecorder(store, ledger, session_id="")
    sink = recorder.record_model_call

    resolved = resolve_model(model_spec, settings)
    # One client per endpoint; each phase wraps it so the ledger knows what the call was for.
    main_inner = build_model(model_spec, settings)
    main_model = RecordingModel(main_inner, sink, phase="main")
    fast_spec = router_model_spec(settings, model_spec)
    try:
        fast_inner: Model | None = build_model(fast_spec, settings)
        fast_window: int | None = window_of(resolve_model(fast_spec, settings))
    except ConfigError:
        # A router model on another, unconfigured provider: summarise with the main model, and
        # let the data tools report the missing key when they are used.
        fast_inner, fast_window = None, None

    def router_model() -> Model:
        inner = fast_inner if fast_inner is not None else build_model(fast_spec, settings)
        return RecordingModel(inner, sink, phase="router")

    def fast(phase: str) -> Model | None:
        return RecordingModel(fast_inner, sink, phase=phase) if fast_inner is not None else None

    subagent_model = RecordingModel(main_inner, sink, phase="subagent")
    memory = open_memory(settings)
    tools, data_router = build_tools(
        settings,
        model_spec,
        router_model=router_model,
        channel=channel,
        ask_user=ask_user,
        subagent_model=subagent_model,
        memory=memory,
    )
    config = AgentConfig(
        max_iterations=max_iterations or settings.max_iterations,
        channel=channel,
        home=settings.home,
        context_window=window_of(resolved),
        fast_context_window=fast_window,
    )
    policy = RulesPolicy(settings.settings_path, settings.cwd)
    agent = SessionAgent(
        main_model,
        tools,
        config=config,
        policy=policy,
        approver=approver,
        fast_model=fast("compaction"),
    )
    skill_tool = tools.get("skill")
    if isinstance(skill_tool, SkillTool):
        agent.prompt_sections.append(skills_prompt(list(skill_tool.skills.values())))
    agent.constraint_model = fast("constraints")
    if memory is not None:
        agent.use_memory(memory, fast("memory") or main_model)
    agent.attach(recorder, window_probe=window_probe(resolved))
    if resume is not None:
        agent.resume(None if resume == "latest" else resume)
    else:
        agent.new_session()
    return agent, data_router
