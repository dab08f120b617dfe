"""rmqkit broker side: protocol codecs, store, servers and the Python SDK."""

# Before any submodule loads: from here on the hot modules come from their mypyc build when fresh.
from broker.compiled import ACTIVE as COMPILED

__all__ = ["COMPILED"]
