"""`dexter model … --from-session SESSION`: the model of the companies a recorded research
session looked at. One scripted `dexter ask` (through the finance router, over the recorded SEC
data) fetches Apple then NVIDIA; a second answers without a tool call. Both serve every test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.cli.model_session import companies_in
from dexter.store import SessionStore, open_store
from tests.support.sec_mirror import Mirror, MirrorServer
from tests.test_research_e2e import offers_tool, text_reply, tool_calls_reply


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(the session that looked at AAPL and NVDA, the one that looked at none), with the SEC
    mirror still serving and the working folder a fresh temporary one."""
    from tests.support.wire_server import running_server

    tmp_path = tmp_path_factory.mktemp("model-session")
    server = running_server()
    wire = next(server)
    with pytest.MonkeyPatch.context() as monkeypatch, MirrorServer(Mirror()) as sec:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("DEXTER_DUCKDUCKGO_BASE_URL", "http://127.0.0.1:9")
        for name in ("FINANCIAL_DATASETS_API_KEY", "DEXTER_MODEL", "DEXTER_ROUTER_MODEL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("DEXTER_HOME", str(tmp_path / ".dexter"))
        monkeypatch.setenv("DEXTER_FINANCE_TOOLS", "routed")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
        monkeypatch.setenv("OPENAI_BASE_URL", wire.url + "/v1")
        for key, value in sec.env().items():
            monkeypatch.setenv(key, value)
        wire.push(tool_calls_reply(("c1", "get_financials", {"query": "Apple and NVIDIA"})))
        wire.route(
            offers_tool("income_statements"),
            tool_calls_reply(
                ("r1", "income_statements", {"company": "AAPL", "period": "annual", "limit": 2}),
                ("r2", "income_statements", {"company": "NVDA", "period": "annual", "limit": 2}),
            ),
        )
        wire.push(text_reply("Apple earned more than NVIDIA."))
        ask = ["ask", "--model", "openai:gpt-test"]
        assert main([*ask, "How do Apple and NVIDIA compare?"]) == 0
        wire.push(text_reply("A DCF discounts forecast free cash flows."))
        assert main([*ask, "What is a DCF?"]) == 0
        store = open_store(tmp_path / ".dexter", create=False)
        listed = SessionStore(store).list()
        store.close()
        by_title = {info.title: info.id for info in listed}
        yield by_title["How do Apple and NVIDIA compare?"], by_title["What is a DCF?"]
    server.close()


def test_a_dcf_from_a_session_prefix_models_its_first_company(
    sessions: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    looked, _ = sessions
    argv = ["model", "dcf", "--from-session", looked[:8], "--price", "230", "-o", "s.xlsx"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert f"session {looked} looked at AAPL, NVDA" in captured.err
    assert "AAPL DCF, 2021-FY..2025-FY filed" in captured.out
    assert Path("s.xlsx").read_bytes()[:2] == b"PK"


def test_comps_from_a_session_compares_every_company_it_used(
    sessions: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    looked, _ = sessions
    prices = ["--price", "AAPL=230", "--price", "NVDA=180"]
    assert main(["model", "comps", "--from-session", looked, *prices, "-o", "c.xlsx"]) == 0
    out = capsys.readouterr().out
    assert "AAPL EV/EBITDA 23.8" in out and "NVDA EV/EBITDA" in out
    assert out.index("AAPL") < out.index("NVDA")


def test_a_session_without_a_company_or_unknown_says_what_to_do(
    sessions: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, chatted = sessions
    assert main(["model", "dcf", "--from-session", chatted, "-o", "x.xlsx"]) == 2
    err = capsys.readouterr().err
    assert f"session {chatted} looked at no company" in err and "dexter model dcf NVDA" in err
    assert main(["model", "three-statement", "--from-session", "zzzz", "-o", "x.xlsx"]) == 2
    assert "No session 'zzzz'" in capsys.readouterr().err
    assert main(["model", "dcf", "AAPL", "--from-session", chatted, "-o", "x.xlsx"]) == 2
    assert "one of the two" in capsys.readouterr().err
    assert main(["model", "dcf", "-o", "x.xlsx"]) == 2
    assert not Path("x.xlsx").exists()


def test_companies_are_read_in_order_of_first_use_from_direct_and_routed_calls() -> None:
    records = [
        {"type": "tool_call", "tool": "price_snapshot", "args": {"ticker": "nvda"}, "data": {}},
        {"type": "tool_call", "tool": "web_search", "args": {"query": "AAPL"}, "data": {}},
        {"type": "tool_call", "tool": "income_statements", "error": "x", "args": {"company": "T"}},
        {
            "type": "tool_call",
            "tool": "get_financials",
            "args": {"query": "Apple and Nvidia"},
            "data": {
                "calls": [
                    # Asked by name, the data resolved it: the ticker is what counts.
                    {
                        "ok": True,
                        "args": {"company": "Apple"},
                        "data": {"company": {"ticker": "AAPL"}},
                    },
                    {"ok": False, "args": {"company": "MSFT"}, "data": None},
                    {"ok": True, "args": {"company": "NVDA"}, "data": None},
                ]
            },
        },
    ]
    assert companies_in(records) == ["NVDA", "AAPL"]
