"""`dexter` with no command: the interactive session."""

from __future__ import annotations

from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.models.base import Model
from dexter.runtime import CLI, AgentSpec


def run_interactive_command(model_spec: str | None, *, resume: str | None = None) -> int:
    from dexter.cli.interactive import run_interactive
    from dexter.cli.interactive.questions import QuestionBridge

    runtime = open_runtime(load_settings())
    questions = QuestionBridge()
    try:
        agent = runtime.agent(
            AgentSpec(model=model_spec, channel=CLI, resume=resume), ask_user=questions.ask
        )

        def switch_model(spec: str) -> Model:
            # Every phase follows: window, fast model, sub-agents; the ledger keeps the session.
            return runtime.with_model(agent, spec)

        return run_interactive(
            agent, switch_model=switch_model, model_label=agent.model.name, questions=questions
        )
    finally:
        # The data router's HTTP clients belong to the app's event loop, which has ended.
        runtime.close_local()
