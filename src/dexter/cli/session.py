"""Assemble an Agent from settings: model, tools, permissions, home directory."""

from __future__ import annotations

from dexter.agent.executor import Approver
from dexter.agent.loop import Agent, AgentConfig
from dexter.config import Settings
from dexter.models.base import Model
from dexter.providers import build_model
from dexter.tools.default import default_registry


def build_agent(
    settings: Settings,
    model_spec: str | None,
    *,
    approver: Approver | None = None,
    max_iterations: int | None = None,
    channel: str = "cli",
    model: Model | None = None,
) -> Agent:
    config = AgentConfig(
        max_iterations=max_iterations or settings.max_iterations,
        channel=channel,
        home=settings.home,
    )
    return Agent(
        model or build_model(model_spec, settings),
        default_registry(settings),
        config=config,
        approver=approver,
    )
