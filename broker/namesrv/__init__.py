"""The NameServer: broker registry, topic routes and KV config."""
