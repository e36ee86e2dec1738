"""What a user tells Dexter to remember comes back in a later session, with its file."""

from __future__ import annotations

from pathlib import Path

from dexter.agent.events import Done, ToolEnd
from dexter.memory.index import MemoryIndex
from dexter.memory.tools import memory_tools
from dexter.models.scripted import ScriptedModel, calls, text
from dexter.models.types import SystemMessage
from dexter.session import Session
from tests.support.sessions import hand_session


def session(home: Path, model: ScriptedModel) -> Session:
    memory = MemoryIndex(home, None)  # keyword-only keeps this test fast; vectors are tested apart
    built = hand_session(home, model, tools=memory_tools(memory), memory=memory)
    built.new_session()
    return built


async def test_a_holding_told_in_one_session_is_recalled_in_the_next(tmp_path: Path) -> None:
    fact = "Holds 200 NVDA shares at a $410 average cost"
    first = session(
        tmp_path,
        ScriptedModel(
            [calls(("memory_update", {"action": "add", "content": fact})), text("Noted.")]
        ),
    )
    events = [e async for e in first.run("Remember that I hold 200 NVDA at $410.")]
    assert isinstance(events[-1], Done) and events[-1].status == "answered"
    assert fact in (tmp_path / "memory" / "MEMORY.md").read_text()

    later = ScriptedModel(
        [calls(("memory_search", {"query": "NVDA position shares"})), text("You hold 200.")]
    )
    second = session(tmp_path, later)
    events = [e async for e in second.run("How big is my Nvidia position?")]
    system = later.requests[0].messages[0]
    assert isinstance(system, SystemMessage) and fact in system.content
    found = next(e for e in events if isinstance(e, ToolEnd) and e.tool == "memory_search")
    assert "MEMORY.md" in found.result and "200 NVDA" in found.result


async def test_hand_edits_are_reflected_at_once(tmp_path: Path) -> None:
    memory = MemoryIndex(tmp_path, None)
    memory.files.append("MEMORY.md", "Prefers conservative DCF assumptions")
    assert await memory.search("conservative DCF")
    path = memory.files.path("MEMORY.md")
    path.write_text(path.read_text().replace("conservative", "aggressive"))
    hits = await memory.search("conservative DCF assumptions")
    assert all("conservative" not in hit.text for hit in hits)
    assert await memory.search("aggressive DCF")
