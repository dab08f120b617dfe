"""Free loopback ports for tests that start a local cluster on consecutive ports."""

from __future__ import annotations

import random
import socket

# the offsets from a base that `rmq cluster up` uses: NameServer, controllers, brokers and HA ports
CLUSTER_OFFSETS = (0, 3, 4, 5, 6, 7, 8, 10, 12, 20, 22, 30, 32)


def free_base_port() -> int:
    """A base below the ephemeral range (32768+ here), where no client connection's source port can
    take one of the cluster's ports between this probe and the bind; each port is bound once to check."""
    while True:
        base = random.randrange(20000, 32700, 100)
        if all(_bindable(base + d) for d in CLUSTER_OFFSETS):
            return base


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
