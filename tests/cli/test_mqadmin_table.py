"""mqadmin's listing holds every command of every family exactly once."""

from __future__ import annotations

from collections import Counter

from cli.mqadmin import (
    acl,
    auth,
    broker_ops,
    cluster,
    controller,
    group,
    message,
    send_rt,
    store,
    topic,
    trace,
)
from cli.mqadmin.commands import COMMANDS, find

FAMILIES = (topic, group, message, cluster, send_rt, store, acl, trace, broker_ops, auth, controller)


def test_every_family_command_is_listed_once() -> None:
    listed = Counter(c.name for c in COMMANDS)
    defined = Counter(c.name for family in FAMILIES for c in family.COMMANDS)
    assert listed == defined
    assert max(listed.values()) == 1


def test_commands_are_found_by_name_in_any_case() -> None:
    assert find("UPDATETOPIC") is find("updateTopic") is not None
    assert find("noSuchCommand") is None
