"""rmqkit broker side: protocol codecs, store, servers and the Python SDK."""

import os
import sys

if os.environ.get("RMQ_NO_ACCEL") == "1":  # run the sources even where the compiled modules are built
    from broker.compiled import SourcesFirst

    sys.meta_path.insert(0, SourcesFirst())
