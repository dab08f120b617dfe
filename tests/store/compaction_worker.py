"""Child of the compaction crash test: opens the store, says "compacting", then compacts after a
short, varying pause (the parent's SIGKILL lands before, during or after the swap).

Run as ``python -m tests.store.compaction_worker STORE ATTEMPT``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.store.helpers import open_store
from tests.store.test_compaction import NEW_VALUES, TOPIC, compaction_settings, new_values, write


def main() -> None:
    root, attempt = Path(sys.argv[1]), int(sys.argv[2])
    store = open_store(root, **compaction_settings())
    store.set_topic_policies(frozenset({TOPIC}), {})
    # new values for the compaction to cover on each attempt
    write(store, new_values(attempt), NEW_VALUES)
    store.compaction.feed()
    print("compacting", flush=True)
    time.sleep(attempt * 0.03)
    store.compaction.compact_all()
    time.sleep(60)


if __name__ == "__main__":
    main()
