"""Assemble a research session from settings: models (recorded in the ledger), data sources,
tools, context windows, the stored session (new or resumed)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from dexter.agent.executor import Approver
from dexter.agent.loop import AgentConfig
from dexter.config import ConfigError, Settings
from dexter.data.errors import DataError
from dexter.data.router import DataRouter
from dexter.models.base import Model
from dexter.models.recording import RecordingModel
from dexter.providers import ResolvedModel, build_model, fast_model_spec, resolve_model
from dexter.providers.discovery import context_window, discover_context_window
from dexter.session import SessionAgent, SessionRecorder
from dexter.store import Ledger, open_store, overrides_from_settings
from dexter.tools.default import default_registry
from dexter.tools.finance.routed import ModelFactory
from dexter.tools.registry import ToolRegistry


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
    settings: Settings, model_spec: str | None, *, router_model: ModelFactory | None = None
) -> tuple[ToolRegistry, DataRouter]:
    data_router = build_data_router(settings)
    if router_model is None:
        spec = router_model_spec(settings, model_spec)

        def router_model() -> Model:
            return build_model(spec, settings)

    registry = default_registry(settings, data_router=data_router, router_model=router_model)
    return registry, data_router


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
) -> tuple[SessionAgent, DataRouter]:
    """The session's agent and the data router it uses (close the router when done).

    `resume`: a session id or prefix, or "latest"; None starts a new session.
    """
    store = open_store(settings.home)
    ledger = Ledger(store, overrides_from_settings(settings))
    recorder = SessionRecorder(store, ledger, session_id="")
    sink = recorder.record_model_call

    resolved = resolve_model(model_spec, settings)
    main_model = RecordingModel(build_model(model_spec, settings), sink, phase="main")
    fast_spec = router_model_spec(settings, model_spec)

    def router_model() -> Model:
        return RecordingModel(build_model(fast_spec, settings), sink, phase="router")

    try:
        fast_resolved = resolve_model(fast_spec, settings)
        fast_model: Model | None = RecordingModel(
            build_model(fast_spec, settings), sink, phase="compaction"
        )
        fast_window: int | None = window_of(fast_resolved)
    except ConfigError:
        # A router model on another, unconfigured provider: summarise with the main model.
        fast_model, fast_window = None, None

    tools, data_router = build_tools(settings, model_spec, router_model=router_model)
    config = AgentConfig(
        max_iterations=max_iterations or settings.max_iterations,
        channel=channel,
        home=settings.home,
        context_window=window_of(resolved),
        fast_context_window=fast_window,
    )
    agent = SessionAgent(main_model, tools, config=config, approver=approver, fast_model=fast_model)
    agent.attach(recorder, window_probe=window_probe(resolved))
    if resume is not None:
        agent.resume(None if resume == "latest" else resume)
    else:
        agent.new_session()
    return agent, data_router
