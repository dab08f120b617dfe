"""rmqkit broker side: protocol codecs, store, servers and the Python SDK."""
