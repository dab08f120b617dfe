"""Writer process for the crash test: appends under SYNC_FLUSH and prints each acknowledged seq.

Run as ``python -m tests.broker.store.crash_writer STORE FIRST_SEQ [SETTING=INT ...]``; it writes until
killed. The settings override the small store geometry of the tests.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from tests.broker.store.helpers import message_for, open_store


def main() -> None:
    root, seq = Path(sys.argv[1]), int(sys.argv[2])
    overrides = {k: int(v) for k, v in (arg.split("=", 1) for arg in sys.argv[3:])}
    store = open_store(root, flush_disk_type="SYNC_FLUSH", **overrides)
    rng = random.Random(seq)
    out = sys.stdout
    print("ready", flush=True)
    while True:
        n = rng.choice([1, 1, 1, 4, 8])
        result = store.put_messages([message_for(s) for s in range(seq, seq + n)])
        if not result.ok:
            print(f"error {result.status} {result.remark}", flush=True)
            return
        out.write("".join(f"ack {s}\n" for s in range(seq, seq + n)))
        out.flush()
        seq += n


if __name__ == "__main__":
    main()
