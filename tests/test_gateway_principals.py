"""Whose run a chat message starts: principal resolution per channel, and the operators and
grants gateway.json lists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dexter.config import ConfigError
from dexter.gateway.config import GatewayConfig, load_config
from dexter.gateway.principals import resolve
from dexter.gateway.types import InboundMessage
from dexter.principal import OPERATOR, FileGrants, Grants


def config(tmp_path: Path, **data: Any) -> GatewayConfig:
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(data))
    return load_config(path)


def test_operators_and_grants_are_read_from_gateway_json(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    loaded = config(
        tmp_path,
        operators=["telegram:111", "whatsapp:+44 7700 900123", "slack:T01/U02"],
        principals={
            "telegram:222": {"files": {"read": [str(shared)]}, "tools": ["heartbeat"]},
            "whatsapp:+44 7700 900999": {"files": {"read": str(shared)}},
        },
    )
    assert loaded.is_operator("whatsapp:+447700900123") and loaded.is_operator("slack:T01/U02")
    assert not loaded.is_operator("telegram:222")
    assert loaded.grants_for("telegram:222") == Grants(
        FileGrants(read=(shared.resolve(),)), frozenset({"heartbeat"})
    )
    assert loaded.grants_for("whatsapp:+447700900999").files.read == (shared.resolve(),)
    assert loaded.grants_for("telegram:333").empty


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"operator": ["telegram:1"]}, 'unknown key "operator".*did you mean "operators"'),
        (
            {"principals": {"telegram:222": {"file": {"read": ["/tmp"]}}}},
            'unknown key "principals.telegram:222.file".*did you mean "files"',
        ),
        (
            {"principals": {"telegram:222": {"files": {"read": ["research"]}}}},
            r"principals\.telegram:222: granted folder 'research' must be absolute",
        ),
        (
            {"principals": {"telegram:222": {"files": {"exec": ["/tmp"]}}}},
            r"principals\.telegram:222: unknown file grant \"exec\"",
        ),
        ({"principals": {"../etc": {}}}, "principals: '../etc' is not a principal id"),
        ({"operators": ["telegram:group:-100"]}, 'operators: "telegram:group:-100" is not a'),
        ({"operators": ["operator"]}, "is not a person's chat id"),
    ],
)
def test_bad_principal_settings_are_named(
    tmp_path: Path, data: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        config(tmp_path, **data)


def inbound(channel: str, chat_id: str, chat_type: str, sender: str, **kw: Any) -> InboundMessage:
    return InboundMessage(channel, "default", "m1", chat_id, chat_type, sender, text="hi", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("message", "run_id", "kind", "name", "target"),
    [
        (
            inbound("telegram", "222", "direct", "222", sender_name="Ana"),
            "telegram:222",
            "user",
            "Ana",
            "telegram:222",
        ),
        (
            inbound("telegram", "-1001", "group", "222", chat_title="Desk"),
            "telegram:group:-1001",
            "group",
            "Desk",
            "telegram:-1001",
        ),
        (
            inbound("slack", "D0DM1", "direct", "U02", sender_name="Bo"),
            "slack:T01/U02",
            "user",
            "Bo",
            "slack:U02",
        ),
        (
            inbound("slack", "C03", "group", "U02", thread_id="171.5"),
            "slack:T01/C03",
            "group",
            "",
            "slack:C03",
        ),
        (
            inbound("whatsapp_cloud", "+447700900123", "direct", "+447700900123"),
            "whatsapp:+447700900123",
            "user",
            "",
            "whatsapp:+447700900123",
        ),
        (
            inbound("whatsapp_web", "4477@s.whatsapp.net", "direct", "+4477"),
            "whatsapp:+4477",
            "user",
            "",
            "whatsapp:+4477",
        ),
        (
            inbound("whatsapp_web", "1203@g.us", "group", "+4477", chat_title="Club"),
            "whatsapp:group:1203@g.us",
            "group",
            "Club",
            "whatsapp:1203@g.us",
        ),
    ],
)
def test_each_chat_is_a_principal_of_its_own(
    message: InboundMessage, run_id: str, kind: str, name: str, target: str
) -> None:
    found = resolve(message, GatewayConfig(), workspace="T01")
    assert (found.run.id, found.run.kind, found.run.display_name) == (run_id, kind, name)
    assert found.run.reply_target == target
    assert not found.run.is_operator


def test_an_operator_id_runs_as_the_operator_and_a_group_is_limited_to_its_asker(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    loaded = config(
        tmp_path,
        operators=["telegram:111"],
        principals={"telegram:group:-100": {"files": {"read": [str(shared)]}}},
    )
    assert resolve(inbound("telegram", "111", "direct", "111"), loaded).run == OPERATOR
    by_operator = resolve(inbound("telegram", "-100", "group", "111"), loaded)
    assert by_operator.run.id == "telegram:group:-100" and by_operator.asker == OPERATOR
    assert by_operator.run.grants.files.readable == (shared.resolve(),)
    by_member = resolve(inbound("telegram", "-100", "group", "222"), loaded)
    assert by_member.run.id == "telegram:group:-100"
    assert by_member.run.grants.empty  # the member has no grant of their own
    with pytest.raises(ValueError, match="without a sender id"):
        resolve(inbound("whatsapp_web", "1203@g.us", "group", ""), loaded)
