"""Wire-compatibility harness: real third-party RocketMQ clients driven against our servers.

``install`` puts the clients into ``.cache/peers/`` (ali-ons from npm, the C++ client from PyPI in a
venv of its own), ``drivers/`` holds the scripts that run them and print JSON lines, and ``runner``
starts those scripts from tests and turns their output into typed results.
"""
