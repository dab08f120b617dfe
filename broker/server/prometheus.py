"""Prometheus text exposition format (version 0.0.4): families with HELP, TYPE and samples."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class MetricsText:
    """Collects families in order and renders them; a family is declared once."""

    def __init__(self, prefix: str = "rocketmq") -> None:
        self.prefix = prefix
        self._lines: list[str] = []
        self._declared: set[str] = set()

    def _declare(self, name: str, kind: str, help_text: str) -> str:
        full = f"{self.prefix}_{name}"
        if full not in self._declared:
            self._declared.add(full)
            self._lines.append(f"# HELP {full} {help_text}")
            self._lines.append(f"# TYPE {full} {kind}")
        return full

    def _sample(self, name: str, labels: Mapping[str, str], value: float) -> None:
        if labels:
            rendered = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
            self._lines.append(f"{name}{{{rendered}}} {_number(value)}")
        else:
            self._lines.append(f"{name} {_number(value)}")

    def gauge(self, name: str, help_text: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        self._sample(self._declare(name, "gauge", help_text), labels or {}, value)

    def counter(
        self, name: str, help_text: str, value: float, labels: Mapping[str, str] | None = None
    ) -> None:
        self._sample(self._declare(name + "_total", "counter", help_text), labels or {}, value)

    def histogram(
        self,
        name: str,
        help_text: str,
        buckets: Sequence[tuple[float, int]],
        total: float,
        count: int,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        """``buckets`` are (upper bound, cumulative count) pairs, ascending; +Inf is added."""
        full = self._declare(name, "histogram", help_text)
        base = dict(labels or {})
        for bound, cumulative in buckets:
            self._sample(f"{full}_bucket", {**base, "le": _number(bound)}, cumulative)
        self._sample(f"{full}_bucket", {**base, "le": "+Inf"}, count)
        self._sample(f"{full}_sum", base, total)
        self._sample(f"{full}_count", base, count)

    def render(self) -> str:
        return "\n".join(self._lines) + "\n"
