"""Benchmarks run by `make bench`: each module exposes run(quick) -> list of result dicts."""
