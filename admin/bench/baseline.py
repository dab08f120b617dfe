"""The transport-only baseline: a RemotingServer that answers without a broker or a store.

SEND requests get a canned SUCCESS with the headers a broker sends; PULL requests get a canned body
of the size the broker's answers had, so the same client, framing and loop measure what the remoting
layer alone can do. Run it in-process (:class:`BaselineServer`) or in its own process with
``python -m admin.bench.baseline [--pull-body BYTES] [--pull-msgs N]``, which prints its port on
stdout and serves until stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from broker.protocol import properties as message_properties
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import PullMessageResponseHeader, SendMessageResponseHeader
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import RemotingChannel
from broker.remoting.server import RemotingServer, install_uvloop

_MSG_ID = "7F00000100002A9F0000000000000000"


class BaselineServer:
    """Canned answers on 127.0.0.1; ``pull_body`` bytes and ``pull_msgs`` messages per pull."""

    def __init__(self, pull_body: int = 0, pull_msgs: int = 0) -> None:
        self.server = RemotingServer("127.0.0.1", 0, idle_timeout=None, max_inflight=1024)
        send = SendMessageResponseHeader(msgId=_MSG_ID, queueId=0, queueOffset=0).to_ext_fields()
        send.update({message_properties.MSG_REGION: "DefaultRegion", message_properties.TRACE_ON: "true"})
        self._send_fields = send
        self._pull_body = b"\0" * pull_body if pull_body else None
        self._pull_msgs = pull_msgs
        for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            self.server.register(code, self._send)
        self.server.register(RequestCode.PULL_MESSAGE, self._pull)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    async def _send(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        response = make_response(request)
        response.ext_fields = dict(self._send_fields)
        return response

    async def _pull(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        offset = int(request.ext_fields.get("queueOffset", "0"))
        header = PullMessageResponseHeader(
            suggestWhichBrokerId=0, nextBeginOffset=offset + self._pull_msgs, minOffset=0, maxOffset=1 << 62
        )
        if self._pull_body is None:
            return make_response(request, ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE", header=header)
        return make_response(request, header=header, body=self._pull_body)

    async def __aenter__(self) -> BaselineServer:
        await self.server.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.server.stop(grace=1.0)


class BaselineProcess:
    """:class:`BaselineServer` in a child process, so it does not share the load generator's GIL."""

    def __init__(self, pull_body: int = 0, pull_msgs: int = 0) -> None:
        self._args = ["--pull-body", str(pull_body), "--pull-msgs", str(pull_msgs)]
        self._proc: asyncio.subprocess.Process | None = None
        self.address = ""

    async def __aenter__(self) -> BaselineProcess:
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "admin.bench.baseline", *self._args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert self._proc.stdout is not None
        line = await asyncio.wait_for(self._proc.stdout.readline(), 30)
        if not line.strip().isdigit():
            await self.__aexit__()
            raise RuntimeError("the baseline server process did not start")
        self.address = f"127.0.0.1:{int(line)}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def _serve(pull_body: int, pull_msgs: int) -> None:
    loop = asyncio.get_running_loop()
    async with BaselineServer(pull_body, pull_msgs) as server:
        print(server.server.port, flush=True)
        await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m admin.bench.baseline")
    parser.add_argument("--pull-body", type=int, default=0, help="body bytes of each pull answer")
    parser.add_argument("--pull-msgs", type=int, default=0, help="messages each pull answer claims")
    args = parser.parse_args(argv)
    install_uvloop()
    asyncio.run(_serve(args.pull_body, args.pull_msgs))


if __name__ == "__main__":
    main()
