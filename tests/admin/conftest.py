"""The admin service tests share the real node of the CLI tests."""

from tests.cli.online.conftest import cluster  # noqa: F401
