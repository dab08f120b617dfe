"""The NameServer: broker registry, topic routes and KV config (reference §2.4, §6.8)."""
