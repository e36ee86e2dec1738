"""Assemble an Agent from settings: model, data sources, tools, permissions, home directory."""

from __future__ import annotations

from dexter.agent.executor import Approver
from dexter.agent.loop import Agent, AgentConfig
from dexter.config import ConfigError, Settings
from dexter.data.errors import DataError
from dexter.data.router import DataRouter
from dexter.models.base import Model
from dexter.providers import build_model, fast_model_spec, resolve_model
from dexter.tools.default import default_registry
from dexter.tools.registry import ToolRegistry


def router_model_spec(settings: Settings, model_spec: str | None) -> str:
    """The model that plans data calls: DEXTER_ROUTER_MODEL or `routerModel`, else the main
    model's provider's fast model (the same key serves both)."""
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


def build_tools(settings: Settings, model_spec: str | None) -> tuple[ToolRegistry, DataRouter]:
    data_router = build_data_router(settings)
    spec = router_model_spec(settings, model_spec)

    def router_model() -> Model:
        return build_model(spec, settings)

    return default_registry(
        settings, data_router=data_router, router_model=router_model
    ), data_router


def build_agent(
    settings: Settings,
    model_spec: str | None,
    *,
    approver: Approver | None = None,
    max_iterations: int | None = None,
    channel: str = "cli",
    model: Model | None = None,
) -> tuple[Agent, DataRouter]:
    """The agent and the data router it uses (close the router when done)."""
    config = AgentConfig(
        max_iterations=max_iterations or settings.max_iterations,
        channel=channel,
        home=settings.home,
    )
    main_model = model or build_model(model_spec, settings)
    tools, data_router = build_tools(settings, model_spec)
    agent = Agent(main_model, tools, config=config, approver=approver)
    return agent, data_router
