"""`dexter` with no command: the interactive session."""

from __future__ import annotations

from dexter.cli.session import build_agent
from dexter.config import load_settings
from dexter.models.base import Model
from dexter.models.recording import RecordingModel
from dexter.providers import build_model


def run_interactive_command(model_spec: str | None, *, resume: str | None = None) -> int:
    from dexter.cli.interactive import run_interactive

    settings = load_settings()
    from dexter.cli.interactive.questions import QuestionBridge

    questions = QuestionBridge()
    agent, _data_router = build_agent(settings, model_spec, resume=resume, ask_user=questions.ask)

    def switch_model(spec: str) -> Model:
        # Calls on the new model are still recorded in the session's ledger.
        return RecordingModel(
            build_model(spec, settings), agent.recorder.record_model_call, phase="main"
        )

    return run_interactive(
        agent, switch_model=switch_model, model_label=agent.model.name, questions=questions
    )
