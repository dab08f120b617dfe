"""The admin service tests share the real node of the CLI tests."""

from tests.cli_online.conftest import cluster  # noqa: F401
