"""Run the benchmarks: ``python -m benchmarks [--quick] [NAME ...]`` (``make bench`` runs them all).

Every figure is printed beside the machine limit measured in the same run, as a ratio, and beside
its target where the project has one. ``--markdown`` prints the table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import traceback
from collections.abc import Callable

from benchmarks import (
    bench_attacks,
    bench_cli,
    bench_compaction,
    bench_failover,
    bench_grpc,
    bench_ha,
    bench_index,
    bench_remoting,
    bench_reset,
    bench_restart,
    bench_scale,
    bench_spark,
    bench_store,
    bench_timers,
    bench_tui,
)

Result = dict[str, object]
LOWER_IS_BETTER = frozenset({"us", "ms", "s", "MiB"})  # units of times and memory: a target is a ceiling
SUITES: dict[str, Callable[[bool], list[Result]]] = {
    "store": bench_store.run,
    "index": bench_index.run,
    "remoting": bench_remoting.run,
    "cli": bench_cli.run,
    "spark": bench_spark.run,
    "tui": bench_tui.run,
    "ha": bench_ha.run,
    "grpc": bench_grpc.run,
    "attacks": bench_attacks.run,
    "compaction": bench_compaction.run,
    "scale": bench_scale.run,
    "timers": bench_timers.run,
    "restart": bench_restart.run,
    "failover": bench_failover.run,
    "reset": bench_reset.run,
}


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) else None


def _row(r: Result) -> list[str]:
    value = _num(r["value"])
    base = _num(r.get("baseline_value"))
    target = _num(r.get("target", r.get("limit")))
    ratio = f"{value / base:.2f}" if value is not None and base else ""
    higher = r.get("unit") not in LOWER_IS_BETTER
    met = "" if target is None or value is None else ("yes" if (value >= target) == higher else "NO")
    if isinstance(r.get("met"), bool):  # a row that judges itself (a median of paired ratios)
        met = "yes" if r["met"] else "NO"
    return [
        str(r["name"]),
        f"{value:,.1f}" if value is not None else str(r["value"]),
        str(r["unit"]),
        str(r.get("baseline") or ""),
        ratio,
        "" if target is None else f"{'>=' if higher else '<='} {target:,.0f}",
        met,
        str(r.get("note", "")),
    ]


HEAD = ["benchmark", "value", "unit", "machine limit", "ratio", "target", "met", "note"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("names", nargs="*", help=f"suites to run: {', '.join(SUITES)}")
    parser.add_argument("--quick", action="store_true", help="smaller data sets")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in SUITES]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(SUITES)}")
    rows: list[list[str]] = []
    failed: list[str] = []
    for name in args.names or list(SUITES):
        began = time.perf_counter()
        print(f"# running {name} ...", file=sys.stderr, flush=True)
        try:
            rows += [_row(r) for r in SUITES[name](args.quick)]
        except Exception:  # one broken suite must not take the others' figures with it
            traceback.print_exc()
            failed.append(name)
            rows.append([name, "failed", "", "", "", "", "", "see the traceback above"])
        print(f"# {name} took {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
    print(f"# {platform.node()} {platform.machine()} Python {platform.python_version()}", file=sys.stderr)
    if args.markdown:
        print("| " + " | ".join(HEAD) + " |")
        print("|" + "---|" * len(HEAD))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEAD)]
        for line in [HEAD, *rows]:
            print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
