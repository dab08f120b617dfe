"""Transport: remoting channels, the remoting server, the client connection pool and RPC hooks.

Above the sans-IO ``broker.protocol``; used by the SDK (``broker.client``) and by every server
(``broker.server``, ``broker.namesrv``, ``broker.grpc``), which never import the SDK.

| module | holds |
|---|---|
| ``channel`` | ``RemotingChannel`` (one connection, both directions), ``Handler``, ``RequestDispatcher`` |
| ``server`` | ``RemotingServer``: listen, dispatch by request code, stop gracefully |
| ``client`` | ``RemotingClient``: one channel per address, opened on first use |
| ``hooks`` | checks run before a server's handlers (``GuardedServer``) |
| ``errors`` | ``RemotingError`` and its connect/timeout/closed cases |
"""
