"""The operator toolkit: one typed admin service used by every front end."""
