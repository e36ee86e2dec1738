"""A Dexter home that has served several principals: the operator, a Telegram user with a job
and memory, a Slack channel and an MCP host, each with sessions and ledger rows."""

from __future__ import annotations

import json
from pathlib import Path

from dexter.models.types import Usage
from dexter.principal import Principal
from dexter.store import Ledger, SessionStore, open_store
from dexter.store.principals import PrincipalStore

ANA = Principal("telegram:222", "user", "Ana")
DESK = Principal("slack:T01/C02", "group", "research-desk")
HOST = Principal("mcp:claude-desktop", "mcp", "claude-desktop")


def seed_principals(home: Path, shared: Path) -> dict[str, list[str]]:
    """Sessions per principal id; Ana also has a job, a memory file and a read grant on
    `shared` in gateway.json. One ledger row has no session (the operator's)."""
    sessions: dict[str, list[str]] = {}
    with open_store(home) as store:
        principals, stored, ledger = PrincipalStore(store), SessionStore(store), Ledger(store)
        plan = [
            ("operator", "What was Apple's FY2025 gross margin?", 3000),
            (ANA.id, "NVDA data centre revenue growth, last 4 quarters", 2000),
            (ANA.id, "Remind me weekly about NVDA filings", 1000),
            (DESK.id, "Compare MSFT and GOOGL capex", 1500),
            (HOST.id, "Summarise Tesla's latest 10-Q", 500),
        ]
        for principal in (ANA, DESK, HOST):
            principals.touch(principal)
        for number, (owner, question, tokens) in enumerate(plan):
            session_id = stored.create("openai:gpt-4.1", question, principal_id=owner)
            stored.add_turn(session_id, f"r{number}", question, "An answer.", "answered", 2, 900.0)
            ledger.record_model_call(
                session_id,
                f"r{number}",
                "openai",
                "gpt-4.1",
                "main",
                Usage(input_tokens=tokens, output_tokens=tokens // 10),
            )
            sessions.setdefault(owner, []).append(session_id)
        ledger.record_model_call(None, None, "openai", "gpt-4.1", "judge", Usage(700, 70))
        with store.transaction() as conn:
            conn.execute(
                "INSERT INTO cron_jobs (id, name, schedule_json, message, created_at, updated_at,"
                " owner, target) VALUES ('job1', 'NVDA filings', '{\"kind\": \"every\"}',"
                " 'Check NVDA', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', ?, ?)",
                (ANA.id, ANA.id),
            )
    memory = ANA.home(home) / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- Ana follows NVDA\n")
    grants = {"principals": {ANA.id: {"files": {"read": [str(shared)]}}}}
    (home / "gateway.json").write_text(json.dumps(grants))
    return sessions
