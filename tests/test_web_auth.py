"""Who gets into `dexter web`, without a browser: the one-time link, password accounts, the CSRF
and origin checks on every state-changing request, 403 on another user's session, and the
refusal to serve beyond loopback without a password. Requests go to the app in process."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from dexter.cli.open_runtime import open_runtime
from dexter.cli.web_command import is_loopback, run_web_command
from dexter.config import ConfigError, load_settings
from dexter.store.sessions import SessionStore
from dexter.web.accounts import load_accounts
from dexter.web.app import create_app
from dexter.web.passwords import hash_password, verify_password
from dexter.web.state import WebState
from tests.support.web import PASSWORDS, web_settings


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[tuple[httpx2.AsyncClient, WebState]]:
    home = tmp_path / ".dexter"
    web_settings(home)
    environ = {"DEXTER_HOME": str(home), "OPENAI_API_KEY": "sk-test-123456"}
    settings = load_settings(cwd=tmp_path, environ=environ)
    state = WebState(open_runtime(settings), load_accounts(settings), cookie="dexter_web_1")
    transport = httpx2.ASGITransport(app=create_app(state))
    async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client, state
    state.runtime.close_local()


async def operator(client: httpx2.AsyncClient, state: WebState) -> str:
    """Log in with the link; the login's CSRF token, from the page."""
    found = await client.get(f"/login?token={state.token.value}")
    assert found.status_code == 303 and found.headers["location"] == "/"
    page = await client.get("/", headers={"accept": "text/html"})
    return csrf_of(page.text)


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf-token" content="([^"]+)"', html)
    assert found, html[:300]
    return found.group(1)


async def as_user(client: httpx2.AsyncClient, name: str, password: str) -> httpx2.Response:
    form = await client.get("/login")
    token = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert token
    return await client.post(
        "/login", data={"csrf": token.group(1), "name": name, "password": password}
    )


async def test_the_login_link_works_once_and_then_says_so(app: tuple) -> None:
    client, state = app
    assert (await client.get("/", headers={"accept": "text/html"})).headers["location"] == (
        "/login?next=%2F"
    )
    await operator(client, state)
    assert (await client.get("/sessions")).status_code == 200
    again = httpx2.AsyncClient(transport=client._transport, base_url="http://testserver")
    spent = await again.get(f"/login?token={state.token.value}")
    assert spent.status_code == 403 and "already used" in spent.text
    assert (await again.get("/sessions")).status_code == 401


async def test_every_page_forbids_framing_and_outside_scripts(app: tuple) -> None:
    client, _ = app
    headers = (await client.get("/login")).headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "same-origin"


async def test_a_login_link_never_sends_you_to_another_site(app: tuple) -> None:
    client, state = app
    found = await client.get(f"/login?token={state.token.value}&next=//evil.example/x")
    assert found.headers["location"] == "/"


async def test_state_changes_need_the_csrf_token_and_this_origin(app: tuple) -> None:
    client, state = app
    csrf = await operator(client, state)
    missing = await client.post("/ask", data={"question": "hi"})
    assert missing.status_code == 403 and "security token" in missing.json()["error"]
    wrong = await client.post("/ask", data={"question": "hi", "csrf": csrf[::-1]})
    assert wrong.status_code == 403
    # With the token in the form, the view gets the whole form (here: an empty question).
    empty = await client.post("/ask", data={"question": " ", "csrf": csrf})
    assert empty.status_code == 400 and "question is empty" in empty.json()["error"]
    header = await client.post("/ask", data={"question": ""}, headers={"x-csrf-token": csrf})
    assert header.status_code == 400
    elsewhere = await client.post(
        "/ask",
        data={"question": "hi", "csrf": csrf},
        headers={"origin": "http://evil.example"},
    )
    assert elsewhere.status_code == 403 and "another site" in elsewhere.json()["error"]
    assert (await client.post("/logout", data={})).status_code == 403
    assert (await client.post("/logout", data={"csrf": csrf})).status_code == 303
    assert (await client.get("/sessions")).status_code == 401


async def test_password_accounts_log_in_as_their_own_principal(app: tuple) -> None:
    client, _ = app
    assert (await as_user(client, "ana", "not-her-password")).status_code == 401
    assert (await as_user(client, "nobody", "whatever-pass")).status_code == 401
    # The form's own token is checked too: a post from another site has no cookie for it.
    forged = await client.post("/login", data={"csrf": "x", "name": "ana", "password": "y"})
    assert forged.status_code == 403
    assert (await as_user(client, "ana", PASSWORDS["ana"])).status_code == 303
    page = await client.get("/", headers={"accept": "text/html"})
    assert ">Ana<" in page.text


async def test_another_users_session_is_403_and_a_missing_one_404(app: tuple) -> None:
    client, state = app
    sessions = SessionStore(state.runtime.store)
    anas = sessions.create("web-test", "Ana's margins", principal_id="web:ana")
    bobs = sessions.create("web-test", "Bob's notes", principal_id="web:bob")
    assert (await as_user(client, "ana", PASSWORDS["ana"])).status_code == 303
    assert (await client.get(f"/sessions/{anas}")).status_code == 200
    assert (await client.get(f"/sessions/{bobs}")).status_code == 403
    assert (await client.get(f"/sessions/{bobs}/runs/r1/export.pdf")).status_code == 403
    assert (await client.get(f"/sessions/{bobs[:4]}")).status_code == 404  # whole ids only
    csrf = csrf_of((await client.get("/", headers={"accept": "text/html"})).text)
    resume = await client.post("/ask", data={"question": "more", "session": bobs, "csrf": csrf})
    assert resume.status_code == 403
    listing = await client.get("/sessions?q=notes")
    assert "Bob&#39;s notes" not in listing.text and "Bob's notes" not in listing.text


def test_passwords_hash_with_scrypt_and_bad_hashes_are_named(tmp_path: Path) -> None:
    stored = hash_password("correct horse", n=2**10)
    assert stored.startswith("scrypt$1024$") and verify_password("correct horse", stored)
    assert not verify_password("correct hors", stored)
    home = tmp_path / ".dexter"
    home.mkdir()
    (home / "settings.json").write_text(
        json.dumps({"web": {"users": {"ana": {"passwordHash": "x"}}}})
    )
    settings = load_settings(cwd=tmp_path, environ={"DEXTER_HOME": str(home)})
    with pytest.raises(ConfigError, match=r'web.users."ana".*--hash-password'):
        load_accounts(settings)


def test_serving_beyond_loopback_needs_a_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.20")
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / ".dexter"))
    args = argparse.Namespace(
        hash_password=False, host="0.0.0.0", port=0, web_model=None, model=None
    )
    with pytest.raises(ConfigError, match=r"refusing to serve on 0\.0\.0\.0 without a password"):
        run_web_command(args)


async def test_repeated_wrong_passwords_are_refused_for_a_while(app: tuple) -> None:
    client, state = app
    for _ in range(state.throttle.limit):
        assert (await as_user(client, "ana", "guess-guess")).status_code == 401
    refused = await as_user(client, "ana", PASSWORDS["ana"])
    assert refused.status_code == 429 and "Too many failed logins" in refused.text
    state.throttle.clock = lambda: 10**9  # the window has passed
    assert (await as_user(client, "ana", PASSWORDS["ana"])).status_code == 303


async def test_the_operator_reads_a_users_session_but_does_not_continue_it(app: tuple) -> None:
    client, state = app
    anas = SessionStore(state.runtime.store).create("web-test", "Ana's", principal_id="web:ana")
    csrf = await operator(client, state)
    page = await client.get(f"/sessions/{anas}")
    assert page.status_code == 200 and "you can read and export it" in page.text
    resume = await client.post("/ask", data={"question": "more", "session": anas, "csrf": csrf})
    assert resume.status_code == 403 and "not continue it" in resume.json()["error"]


def test_hash_password_prints_a_hash_that_logs_in(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("a long enough password\n"))
    out = io.StringIO()
    args = argparse.Namespace(hash_password=True)
    assert run_web_command(args, out=out) == 0
    assert verify_password("a long enough password", out.getvalue().strip())
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    with pytest.raises(ConfigError, match="shorter than 8 characters"):
        run_web_command(args, out=out)


def test_without_the_web_extra_the_command_says_how_to_add_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a)
    )
    args = argparse.Namespace(hash_password=False, host="127.0.0.1", port=0)
    with pytest.raises(ConfigError, match=r"optional `web` extra, and uvicorn is not installed"):
        run_web_command(args)


async def test_on_loopback_another_host_name_is_refused(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, environ={"DEXTER_HOME": str(tmp_path / ".dexter")})
    state = WebState(open_runtime(settings), load_accounts(settings))
    app = create_app(state, hosts=("127.0.0.1", "localhost", "[::1]"))
    transport = httpx2.ASGITransport(app=app)
    for base, status in (
        ("http://127.0.0.1:8765", 200),
        ("http://localhost:8765", 200),
        ("http://[::1]:8765", 200),
        ("http://rebound.example:8765", 421),
    ):
        async with httpx2.AsyncClient(transport=transport, base_url=base) as client:
            assert (await client.get("/login")).status_code == status, base


async def test_an_answer_exports_in_every_format_as_a_download(app: tuple) -> None:
    client, state = app
    sessions = SessionStore(state.runtime.store)
    session = sessions.create("web-test", principal_id="web:ana")
    sessions.add_turn(session, "run-1", "Apple revenue?", "It was **$391,035 million**.",
                      "answered", 1, 10.0)  # fmt: skip
    assert (await as_user(client, "ana", PASSWORDS["ana"])).status_code == 303
    page = await client.get(f"/sessions/{session}")
    for fmt in ("md", "html", "xlsx"):
        assert f"/sessions/{session}/runs/run-1/export.{fmt}" in page.text
        got = await client.get(f"/sessions/{session}/runs/run-1/export.{fmt}")
        assert got.status_code == 200, got.text
        disposition = got.headers["content-disposition"]
        assert disposition == f'attachment; filename="dexter-report-run-1.{fmt}"'
        if fmt == "xlsx":
            assert got.content[:2] == b"PK"  # a zip, as every workbook is
        else:
            assert b"391,035" in got.content
    missing = await client.get(f"/sessions/{session}/runs/run-2/export.md")
    assert missing.status_code == 404
    assert (await client.get(f"/sessions/{session}/runs/run-1/export.docx")).status_code == 404


async def test_the_openbb_endpoint_is_mounted_with_its_own_key_not_the_login(
    tmp_path: Path,
) -> None:
    from dexter.web.openbb import MOUNT_PATH, OpenBBConfig, openbb_mount

    settings = load_settings(cwd=tmp_path, environ={"DEXTER_HOME": str(tmp_path / ".dexter")})
    state = WebState(open_runtime(settings), load_accounts(settings))
    key = "a-key-for-workspace-0123456789"
    mount = openbb_mount(state.runtime, OpenBBConfig(api_key=key))
    app = create_app(state, mounts=[mount], own_auth=(MOUNT_PATH,))
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        described = await client.get("/openbb/agents.json")
        assert described.status_code == 200 and "dexter" in described.json()
        # No login cookie, no CSRF token: the endpoint's own key check answers.
        refused = await client.post("/openbb/query", json={"messages": []})
        assert refused.status_code == 401 and "X-API-Key" in refused.text
        assert (await client.get("/sessions")).status_code == 401  # the app itself still gated


def test_an_account_cannot_take_the_openbb_endpoints_principal(tmp_path: Path) -> None:
    home = tmp_path / ".dexter"
    home.mkdir()
    users = {"openbb": {"passwordHash": hash_password("x" * 12, n=2**10)}}
    (home / "settings.json").write_text(json.dumps({"web": {"users": users}}))
    settings = load_settings(cwd=tmp_path, environ={"DEXTER_HOME": str(home)})
    with pytest.raises(ConfigError, match="taken by Dexter's OpenBB endpoint"):
        load_accounts(settings)


async def test_in_team_mode_web_users_stay_apart_in_postgres(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / ".dexter"
    web_settings(home)
    # The database setting is read from the process environment (dexter.store.database_url).
    monkeypatch.setenv("DEXTER_DATABASE_URL", postgres_url)
    environ = {"DEXTER_HOME": str(home), "DEXTER_DATABASE_URL": postgres_url}
    settings = load_settings(cwd=tmp_path, environ=environ)
    state = WebState(open_runtime(settings), load_accounts(settings))
    sessions = SessionStore(state.runtime.store)
    anas = sessions.create("web-test", "Ana on margins", principal_id="web:ana")
    sessions.add_turn(anas, "run-a", "Ana on margins", "Margins rose.", "answered", 1, 5.0)
    bobs = sessions.create("web-test", "Bob on margins", principal_id="web:bob")
    sessions.add_turn(bobs, "run-b", "Bob on margins", "Margins fell.", "answered", 1, 5.0)
    transport = httpx2.ASGITransport(app=create_app(state))
    try:
        async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as client:
            assert (await as_user(client, "ana", PASSWORDS["ana"])).status_code == 303
            listing = await client.get("/sessions?q=margins")
            assert "Ana on margins" in listing.text and "Bob on margins" not in listing.text
            assert (await client.get(f"/sessions/{bobs}")).status_code == 403
            export = await client.get(f"/sessions/{anas}/runs/run-a/export.md")
            assert export.status_code == 200 and b"Margins rose." in export.content
    finally:
        state.runtime.close_local()
    assert not (home / "dexter.db").exists()


def test_a_login_left_idle_ends() -> None:
    from dexter.principal import OPERATOR
    from dexter.web.auth import Logins

    now = [0.0]
    logins = Logins(idle_seconds=60, clock=lambda: now[0])
    first = logins.start(OPERATOR)
    now[0] = 59
    assert logins.get(first.id) is first  # use keeps it alive
    now[0] = 130
    assert logins.get(first.id) is None
    kept = logins.start(OPERATOR)
    now[0] = 200
    logins.start(OPERATOR)  # starting another forgets the idle one
    assert kept.id not in logins._by_id


def test_accounts_from_a_compose_secret_join_and_replace_the_files(tmp_path: Path) -> None:
    home = tmp_path / ".dexter"
    web_settings(home)  # ana and bob in settings.json
    carol = hash_password("carol-password", n=2**10)
    secret = tmp_path / "web_users.json"
    secret.write_text(json.dumps({"Carol": {"passwordHash": carol, "operator": True},
                                  "bob": {"passwordHash": carol, "name": "Robert"}}))  # fmt: skip
    environ = {"DEXTER_HOME": str(home), "DEXTER_WEB_USERS_FILE": str(secret)}
    accounts = load_accounts(load_settings(cwd=tmp_path, environ=environ)).by_name
    assert sorted(accounts) == ["ana", "bob", "carol"]
    assert accounts["carol"].principal.is_operator
    assert accounts["bob"].principal.display_name == "Robert"
    assert accounts["bob"].password_hash == carol
    secret.write_text('{"dave": {"operator": true}}')
    with pytest.raises(ConfigError, match=r'DEXTER_WEB_USERS account "dave": passwordHash'):
        load_accounts(load_settings(cwd=tmp_path, environ=environ))
    secret.write_text("[1]")
    with pytest.raises(ConfigError, match="DEXTER_WEB_USERS must be a JSON object"):
        load_accounts(load_settings(cwd=tmp_path, environ=environ))
