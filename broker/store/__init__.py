"""The RocketMQ store: CommitLog, ConsumeQueue, IndexFile, checkpoint, recovery, flush, retention."""
