"""mqadmin's text layouts: admin dataclasses formatted exactly as Apache RocketMQ's tools print them.
This module holds what every family's layouts share (Java's spellings, the command list); the layouts
themselves are in ``render_topic``, ``render_group``, ``render_message`` … beside it.

Pure formatting: every function takes what the admin service returned and gives the
text, newline-terminated as Java's ``%n`` leaves it, so scripts that screen-scrape ``mqadmin`` keep
working. Java's own spellings are reproduced on purpose: ``null`` for absent strings, ``Double.toString``
numbers, ``HashMap`` iteration order for message properties, fastjson's pretty JSON.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from broker.protocol.javahash import java_hash

if TYPE_CHECKING:
    pass

ROUTE_RULE = "-" * 158
_PROPERTIES_CAPACITY = 128  # MessageDecoder.string2messageProperties: new HashMap<>(128)


# -- Java spellings ---------------------------------------------------------------------------------
def jstr(value: object) -> str:
    """Java's ``%s``: ``null`` for None, ``true``/``false`` for booleans."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def java_double(value: float) -> str:
    """Java's ``Double.toString``: ``0.0``, ``12.5``, ``1.0E7``."""
    x = float(value)
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(x)
    mantissa, _, exponent = f"{x:e}".partition("e")
    digits = repr(float(mantissa))
    return f"{digits}E{int(exponent)}"


def human_time(epoch_ms: int) -> str:
    """``UtilAll.timeMillisToHumanString2``: ``yyyy-MM-dd HH:mm:ss,SSS`` in local time."""
    t = dt.datetime.fromtimestamp(epoch_ms / 1000)
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{epoch_ms % 1000:03d}"


def plain_time(epoch_ms: int) -> str:
    """``UtilAll.formatDate(…, YYYY_MM_DD_HH_MM_SS)`` in local time."""
    return dt.datetime.fromtimestamp(epoch_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def hashmap_order(keys: Iterable[str], capacity: int = 16) -> list[str]:
    """The iteration order of a ``java.util.HashMap`` holding ``keys`` (inserted in this order) whose
    table has ``capacity`` buckets: by bucket of the spread hash, then insertion."""
    size = capacity
    wanted = list(keys)
    while len(wanted) > size * 3 // 4:
        size *= 2

    def bucket(key: str) -> int:
        h = java_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (size - 1)

    return sorted(wanted, key=bucket)  # sorted() is stable: insertion order within a bucket


def java_map(values: Mapping[str, str], capacity: int = 16) -> str:
    """``HashMap.toString``: ``{k1=v1, k2=v2}`` in HashMap order."""
    return "{" + ", ".join(f"{k}={values[k]}" for k in hashmap_order(values, capacity)) + "}"


def java_fixed(value: float) -> str:
    """Java's ``String.format("%.2f")``, which spells a NaN ``NaN``."""
    return "NaN" if math.isnan(value) else f"{value:.2f}"


def _first_number(text: str | None) -> float:
    try:
        return float((text or "").split(" ")[0])
    except ValueError:
        return 0.0


def _version_names() -> list[str]:
    """``MQVersion.Version`` in declaration order: 3.0.0's pre-releases, then a SNAPSHOT and a release
    for every patch (3.0.1-3.0.15, 3.1.x-3.2.x from 0, 3.3.x-3.9.x from 1, 4.x and 5.x from 0 to 9)."""
    names = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1", *(f"V3_0_0_BETA{i}" for i in range(1, 6))]
    names += [n for i in range(6, 10) for n in (f"V3_0_0_BETA{i}_SNAPSHOT", f"V3_0_0_BETA{i}")]
    names.append("V3_0_0_FINAL")
    patches = [(3, 0, 1, 15), (3, 1, 0, 9), (3, 2, 0, 9), *((3, m, 1, 9) for m in range(3, 10))]
    patches += [(major, m, 0, 9) for major in (4, 5) for m in range(10)]
    for major, minor, first, last in patches:
        for patch in range(first, last + 1):
            names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    return names


def version_desc(version: int) -> str:
    """``MQVersion.getVersionDesc``: the name of a client's version number (the last one beyond)."""
    names = _version_names()
    return names[min(max(version, 0), len(names) - 1)]


def message_queue(topic: str, broker_name: str, queue_id: int) -> str:
    return f"MessageQueue [topic={topic}, brokerName={broker_name}, queueId={queue_id}]"


def fastjson(value: object, depth: int) -> str:
    """fastjson's PrettyFormat: tab indents; String keys on their own line, other keys inline."""
    pad, inner = "\t" * depth, "\t" * (depth + 1)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        parts = []
        for i, (key, item) in enumerate(value.items()):
            sep = "," if i else ""
            if isinstance(key, str):
                parts.append(f'{sep}\n{inner}"{key}":{fastjson(item, depth + 1)}')
            else:
                parts.append(f"{sep}{key}:{fastjson(item, depth + 1)}")
        return "{" + "".join(parts) + f"\n{pad}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        items = ",".join(f"\n{inner}{fastjson(v, depth + 1)}" for v in value)
        return f"[{items}\n{pad}]"
    if isinstance(value, bool):
        return jstr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


# -- help -------------------------------------------------------------------------------------------
def command_list(commands: Sequence[tuple[str, str]]) -> str:
    """What ``mqadmin`` prints without arguments."""
    lines = ["The most commonly used mqadmin commands are:"]
    lines += [f"   {name:<35} {desc}" for name, desc in commands]
    lines += ["", "See 'mqadmin help <command>' for more information on a specific command."]
    return "\n".join(lines) + "\n"
