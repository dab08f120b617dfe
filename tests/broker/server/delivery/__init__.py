"""Delayed, timer, retried and dead-lettered messages against real in-process brokers."""
