"""Python SDK: remoting client, producers, consumers and admin RPCs."""
