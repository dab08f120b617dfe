"""Typed store errors; each message names the file or folder concerned."""

from __future__ import annotations


class StoreError(Exception):
    """Base class for store failures."""


class StoreLockedError(StoreError):
    """Another process holds the store's lock."""


class NotAStoreError(StoreError):
    """A folder that does not hold a RocketMQ store."""


class CorruptFileError(StoreError):
    """A store file whose bytes cannot be what its name says."""
