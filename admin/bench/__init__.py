"""Benchmarks of a running broker over the remoting protocol (``rmq bench``), with a transport-only
baseline measured in the same run: :mod:`admin.bench.runner` drives, :mod:`admin.bench.load` is the
pluggable load generator, :mod:`admin.bench.baseline` the canned-answer server."""
