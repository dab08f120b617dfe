"""Master/slave replication: the HA port and SYNC_MASTER waits (ha_service), the slave's
replication client (ha_client), the slave's metadata sync (sync_metadata), the HA admin
requests (processor) and where consumers should read from (read_policy)."""
