"""What the admin service takes and returns: plain dataclasses, the same for every front end.

Front ends only lay these out (rpk-style tables, JSON, mqadmin's text layouts), so every figure a view
shows is computed here or in the service, never in a renderer. JSON writers turn field names into
camelCase (docs/cli-json.md).

The classes live in one module per area (``names``, ``topics``, ``topic_details``, ``groups``,
``cluster``, ``messages``, ``traces``, ``namesrv``, ``metadata``, ``broker_ops``, ``transactions``,
``timers``, ``rebalances``). This package re-exports them all but imports an area only when one of
its names is first asked for: creating dataclasses is most of the cost of importing them, and a command
should pay only for the areas it shows (``rmq topic list`` imports ``names`` and ``topics``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_AREAS = (
    "names", "topics", "topic_details", "groups", "cluster", "messages", "traces", "namesrv", "metadata",
    "broker_ops", "auth", "transactions", "timers", "rebalances",
)  # fmt: skip

if TYPE_CHECKING:
    from admin.models.auth import *  # noqa: F403
    from admin.models.broker_ops import *  # noqa: F403
    from admin.models.cluster import *  # noqa: F403
    from admin.models.groups import *  # noqa: F403
    from admin.models.messages import *  # noqa: F403
    from admin.models.metadata import *  # noqa: F403
    from admin.models.names import *  # noqa: F403
    from admin.models.namesrv import *  # noqa: F403
    from admin.models.rebalances import *  # noqa: F403
    from admin.models.timers import *  # noqa: F403
    from admin.models.topic_details import *  # noqa: F403
    from admin.models.topics import *  # noqa: F403
    from admin.models.traces import *  # noqa: F403
    from admin.models.transactions import *  # noqa: F403
else:

    def __getattr__(name: str) -> object:
        areas = () if name.startswith("__") else _AREAS  # tools probe modules for __wrapped__ and such
        for area in areas:
            module = importlib.import_module(f"{__name__}.{area}")
            if name in module.__all__:
                value = getattr(module, name)
                globals()[name] = value
                return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
