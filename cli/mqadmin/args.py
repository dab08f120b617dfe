"""What every mqadmin command is made of: its options (:class:`Opt`), the command itself
(:class:`Command`), and the parsers of option values shared by all the command modules."""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from admin.errors import BadInput

if TYPE_CHECKING:
    from admin.service import AdminService

Values = dict[str, str | bool | None]
Handler = Callable[["AdminService", Values], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Opt:
    short: str | None
    long: str
    arg: bool
    desc: str
    required: bool = False

    @property
    def key(self) -> str:
        """commons-cli's Option.getKey: the short name, else the long one."""
        return self.short or self.long


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    desc: str
    options: tuple[Opt, ...]
    run: Handler
    one_of: tuple[str, ...] = ()  # long names of a required option group


COMMON_OPTIONS = (
    Opt("h", "help", False, "Print help"),
    Opt("n", "namesrvAddr", True, "Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'"),
)


BROKER_OR_CLUSTER = ("brokerAddr", "clusterName")  # ``one_of``: -b for one broker or -c for a cluster


def broker_or_cluster(broker: str, cluster: str) -> tuple[Opt, Opt]:
    """``-b brokerAddr`` and ``-c clusterName`` (in that order), described as given: the broker or the
    cluster a command acts on (``one_of=BROKER_OR_CLUSTER``; :func:`targets` reads them)."""
    return o("b", "brokerAddr", broker), o("c", "clusterName", cluster)


def cluster_or_broker(cluster: str, broker: str) -> tuple[Opt, Opt]:
    """:func:`broker_or_cluster` where the command lists ``-c`` first."""
    return o("c", "clusterName", cluster), o("b", "brokerAddr", broker)


# -- values -----------------------------------------------------------------------------------------
def opt(v: Values, name: str) -> str | None:
    value = v.get(name)
    return value.strip() if isinstance(value, str) else None


def req(v: Values, name: str) -> str:
    value = opt(v, name)
    if value is None:
        raise BadInput(f"missing option --{name}")
    return value


def targets(v: Values) -> tuple[str | None, str | None]:
    """The cluster (``-c``) and broker (``-b``) given to a command that acts on either."""
    return opt(v, "clusterName"), opt(v, "brokerAddr")


def flag(v: Values, name: str) -> bool:
    return v.get(name) is True


def boolean(v: Values, name: str, default: bool = False) -> bool:
    """Java's Boolean.parseBoolean of an option's text."""
    value = opt(v, name)
    return default if value is None else value.lower() == "true"


def integer(v: Values, name: str, default: int | None = None) -> int | None:
    value = opt(v, name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise BadInput(f"--{name}: {value!r} is not a number") from None


def non_negative(v: Values, name: str, default: int) -> int:
    """A count or size option: a number, not negative."""
    value = integer(v, name, default)
    assert value is not None
    if value < 0:
        raise BadInput(f"--{name} must not be negative, not {value}")
    return value


async def every(interval: int | None, one_round: Callable[[], Awaitable[str]], head: str = "") -> str:
    """``head`` and one round's text; with an interval (seconds), print them and then a round every
    ``interval`` seconds until interrupted, as the Java tools' ``-i`` loops do."""
    import asyncio

    if interval is None:
        return head + await one_round()
    if interval <= 0:
        raise BadInput(f"--interval must be a positive number of seconds, not {interval}")
    sys.stdout.write(head)
    while True:
        sys.stdout.write(await one_round())
        sys.stdout.flush()
        await asyncio.sleep(interval)


def java_time(text: str) -> int:
    """``currentTimeMillis``, ``now`` or ``yyyy-MM-dd#HH:mm:ss:SSS`` (local time) to epoch ms."""
    if text == "now":
        return int(time.time() * 1000)
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        parsed = dt.datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError:
        raise BadInput(f"{text!r} is not a time: use epoch ms or yyyy-MM-dd#HH:mm:ss:SSS") from None
    return int(parsed.timestamp() * 1000)


def attributes(text: str | None) -> dict[str, str]:
    """The additions of ``+a=b,+c=d`` (AttributeParser's format); the broker checks keys and values."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        key, equals, value = item.strip().partition("=")
        if not key:
            continue
        if not key.startswith("+") or not equals:
            raise BadInput(f"--attributes: {item.strip()!r} is not +key=value (removals are not supported)")
        out[key[1:]] = value
    return out


def o(short: str | None, long: str, desc: str, required: bool = False, arg: bool = True) -> Opt:
    return Opt(short, long, arg, desc, required)


def flag_opt(short: str, long: str, desc: str) -> Opt:
    return Opt(short, long, False, desc)


# -- shared by several command families -------------------------------------------------------------
EXPORT_DIR = Path("/tmp/rocketmq/export")  # exportMetadata's and exportMetrics' default -f
TOPIC = o("t", "topic", "topic name", True)
CLUSTER_LMQ = o("c", "cluster", "Cluster name or lmq parent topic, lmq is used to find the route.")
BEGIN = o("b", "beginTimestamp", "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
END = o("e", "endTimestamp", "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
CHARSET = o("c", "charsetName", "CharsetName(eg: UTF-8,GBK)")
SUBEXPR = o("s", "subExpression", "Subscribe Expression(eg: TagA || TagB)")
MSG_ID = o("i", "msgId", "Message Id", True)
BEGIN_MS = o("b", "beginTimestamp", "Begin timestamp(ms). default:0, eg:1676730526212")
END_MS = o("e", "endTimestamp", "End timestamp(ms). default:Long.MAX_VALUE, eg:1676730526212")


def config_file(v: Values) -> bytes:
    name = req(v, "filename")
    try:
        return Path(name).read_bytes()
    except FileNotFoundError:
        raise BadInput(f"the file path {name} does not exists") from None
    except OSError as exc:
        raise BadInput(f"cannot read {name}: {exc.strerror}") from None


def write_export(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{path}: cannot be written: {exc.strerror or exc}") from None


def now_ms() -> int:
    return int(time.time() * 1000)
