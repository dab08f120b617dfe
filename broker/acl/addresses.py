"""IP white-list patterns of plain ACL (upstream's RemoteAddressStrategyFactory):

``*`` / ``*.*.*.*`` (any), ``192.168.1.5`` (one), ``192.168.1.*`` / ``192.168.*.*`` (any value of the
trailing parts), ``192.168.1.10-20`` / ``192.168.2-5.*`` (a range then stars), ``192.168.1.{5,6,7}``
and ``a,b,c`` (lists), IPv6 addresses (one, or a list); CIDR blocks (``10.0.0.0/8``) are accepted too.
A blank pattern matches nothing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass

Matcher = Callable[[str], bool]


class AddressPatternError(ValueError):
    """A white-list pattern that cannot be understood (the message names it)."""


def _ipv4(host: str) -> list[int] | None:
    try:
        return list(ipaddress.IPv4Address(host).packed)
    except ValueError:
        return None


def _same_ip(a: str, b: str) -> bool:
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return False


def _octet_range(part: str, pattern: str) -> tuple[int, int]:
    if part == "*":
        return 0, 255
    low, sep, high = part.partition("-")
    try:
        start, end = (int(low), int(high)) if sep else (int(part), int(part))
    except ValueError:
        raise AddressPatternError(f"white address {pattern!r}: {part!r} is not a number or range") from None
    if not 0 <= start <= end <= 255:
        raise AddressPatternError(f"white address {pattern!r}: {part!r} is out of 0..255")
    return start, end


@dataclass(frozen=True, slots=True)
class _Octets:
    ranges: tuple[tuple[int, int], ...]

    def __call__(self, host: str) -> bool:
        octets = _ipv4(host)
        if octets is None:
            return False
        return all(lo <= o <= hi for o, (lo, hi) in zip(octets, self.ranges, strict=True))


def _octets(pattern: str) -> Matcher:
    parts = pattern.split(".")
    if len(parts) != 4:
        raise AddressPatternError(f"white address {pattern!r} is not an IPv4 pattern")
    ranges = tuple(_octet_range(p.strip(), pattern) for p in parts)
    # upstream: once a part is a range or a star, every later part must be a star
    open_from = next((i for i, p in enumerate(parts) if not p.strip().isdigit()), 4)
    if any(p.strip() != "*" for p in parts[open_from + 1 :]):
        raise AddressPatternError(f"white address {pattern!r}: only '*' may follow a range or '*'")
    return _Octets(ranges)


def _braces(pattern: str) -> list[str]:
    head, _, tail = pattern.partition("{")
    items = [i.strip() for i in tail.rstrip("}").split(",") if i.strip()]
    if not items:
        raise AddressPatternError(f"white address {pattern!r}: empty {{...}} list")
    return [head + item for item in items]


def _one(pattern: str) -> Matcher:
    if "/" in pattern:
        try:
            net = ipaddress.ip_network(pattern, strict=False)
        except ValueError:
            raise AddressPatternError(f"white address {pattern!r} is not a network") from None
        return lambda host: _in_network(host, net)
    if ":" in pattern:
        try:
            ipaddress.IPv6Address(pattern)
        except ValueError:
            raise AddressPatternError(f"white address {pattern!r} is not an IPv6 address") from None
        return lambda host: _same_ip(host, pattern)
    return _octets(pattern)


def _in_network(host: str, net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    try:
        return ipaddress.ip_address(host) in net
    except ValueError:
        return False


def compile_pattern(pattern: str | None) -> Matcher:
    """A matcher of host strings (no port) for one white-list entry; raises AddressPatternError."""
    text = (pattern or "").strip()
    if not text:
        return lambda host: False
    if text in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return lambda host: True
    items = _braces(text) if text.endswith("}") else [t.strip() for t in text.split(",") if t.strip()]
    matchers = [_one(item) for item in items]
    return lambda host: any(m(host) for m in matchers)


def split_patterns(text: str) -> list[str]:
    """A comma-separated list of white-list patterns (commas inside ``{...}`` stay), blanks dropped."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [item.strip() for item in items if item.strip()]


def host_of(remote_addr: str) -> str:
    """``1.2.3.4:5678`` / ``[::1]:5678`` / ``::1:5678`` -> the host part."""
    host = remote_addr.rpartition(":")[0] if ":" in remote_addr else remote_addr
    host = host.strip("[]")
    if host.startswith("::ffff:") and _ipv4(host[7:]) is not None:
        return host[7:]  # an IPv4 client on a dual-stack socket
    return host
