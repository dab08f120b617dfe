"""The ``rmq`` command tree and the ``mqadmin`` compatible entry point."""
