"""Sans-IO RocketMQ codecs: pure functions on bytes, no sockets and no files."""
