"""``rmq dashboard`` in a real terminal (tmux), end to end: one offset reset and one DLQ resend, typed
as an operator types them, checked against the node afterwards."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from admin.models import GroupSpec, TopicSpec
from admin.service import AdminService
from broker.protocol.codes import RequestCode
from broker.protocol.headers import UpdateConsumerOffsetRequestHeader
from broker.protocol.remoting import make_request
from tests.admin.tui.conftest import TuiCluster, dead_letters
from tests.cli.online.conftest import send

pytestmark = [
    pytest.mark.servers,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)"),
]
TOPIC, GROUP, DLQ_GROUP = "TermTopic", "term-cg", "term-dlq-cg"


class Terminal:
    """One tmux server of its own, one 120x40 window running a command."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.socket = f"rmq-test-{uuid.uuid4().hex[:8]}"
        shell = " ".join(command) + "; echo EXITED; sleep 60"  # keep a crash's last words on screen
        self._tmux("new-session", "-d", "-x", "120", "-y", "40", "sh", "-c", shell, env=env)

    def _tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=10,
            check=True,
        )
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p")

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", *keys)

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-l", text)

    def wait_for(self, check: Callable[[str], bool], what: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if check(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen:\n{shown}")
            time.sleep(0.2)

    def jump(self, text: str) -> None:
        """``:`` and a jump, once the jump dialog is there to take it."""
        self.keys(":")
        self.wait_for(lambda s: "Jump to:" in s, "the jump dialog")
        time.sleep(1.0)  # keys sent before a dialog takes the focus go to the screen below it
        self.type(text)
        self.keys("Enter")

    def confirm(self, name: str) -> None:
        """Type ``name`` into the confirmation on screen, again if keys were lost on a busy machine."""
        for _ in range(3):
            time.sleep(1.0)
            self.type(name)
            self.keys("Enter")
            try:
                self.wait_for(lambda s: "to confirm" not in s, "the confirmation to close", timeout=5)
                return
            except AssertionError:
                self.keys("C-u")  # clear what was typed, and try again
        raise AssertionError(f"the confirmation did not take {name!r}:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def terminal(tui_cluster: TuiCluster, tmp_path: Path) -> Iterator[Terminal]:
    rmq = Path(sys.executable).parent / "rmq"
    env = {**os.environ, "RMQ_CONFIG": str(tmp_path / "config.toml"), "TERM": "xterm-256color"}
    term = Terminal([str(rmq), "dashboard", "-n", tui_cluster.namesrv, "--refresh", "1"], env)
    try:
        term.wait_for(lambda s: "Brokers (enter: detail)" in s, "the dashboard to start")
        yield term
    finally:
        term.close()


def _prepare(tui_cluster: TuiCluster) -> None:
    async def prepare() -> None:
        async with AdminService([tui_cluster.namesrv], 5) as service:
            await service.topic_create(TopicSpec(TOPIC, 1, 1))
            await service.group_create(GroupSpec(GROUP))
        for i in range(3):
            await send(tui_cluster.client, tui_cluster.broker, TOPIC, f"term {i}".encode(), 0)
        header = UpdateConsumerOffsetRequestHeader(
            consumerGroup=GROUP, topic=TOPIC, queueId=0, commitOffset=2
        )
        request = make_request(RequestCode.UPDATE_CONSUMER_OFFSET, header)
        assert (await tui_cluster.client.invoke(tui_cluster.broker, request, 10)).code == 0
        await dead_letters(tui_cluster.client, tui_cluster.broker, TOPIC, DLQ_GROUP, 2)

    tui_cluster.call(prepare())


def test_reset_and_resend_in_a_real_terminal(tui_cluster: TuiCluster, terminal: Terminal) -> None:
    _prepare(tui_cluster)

    async def offsets() -> list[int]:
        async with AdminService([tui_cluster.namesrv], 5) as service:
            return [q.consumer_offset for q in (await service.group_lag(GROUP, TOPIC)).queues]

    async def retried() -> int:
        async with AdminService([tui_cluster.namesrv], 5) as service:
            return (await service.topic_status(f"%RETRY%{DLQ_GROUP}")).total_messages

    # reset: jump to the group, k (skip its backlog: a reset to the latest offsets), the dry-run
    # preview, the typed name
    terminal.jump(f"group {GROUP}")
    terminal.wait_for(lambda s: f"{GROUP}: " in s, "the group's detail")
    terminal.keys("k")
    terminal.wait_for(lambda s: "2 -> 5" in s and "to confirm" in s, "the dry-run preview")
    terminal.confirm(GROUP)
    deadline = time.monotonic() + 30
    while tui_cluster.call(offsets()) != [5]:
        assert time.monotonic() < deadline, terminal.screen()
        time.sleep(0.2)

    # resend: the group's dead letters, all of them, to the group only
    terminal.jump(f"dlq {DLQ_GROUP}")
    terminal.wait_for(lambda s: f"DLQ of {DLQ_GROUP}: 2 message(s)" in s, "the dead letters")
    terminal.keys("a")
    terminal.wait_for(lambda s: "to confirm" in s, "the resend confirmation")
    terminal.confirm(DLQ_GROUP)
    deadline = time.monotonic() + 30
    while tui_cluster.call(retried()) != 2:
        assert time.monotonic() < deadline, terminal.screen()
        time.sleep(0.2)
    terminal.keys("q")
    terminal.wait_for(lambda s: "EXITED" in s, "the dashboard to quit")
