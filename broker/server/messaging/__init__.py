"""The messaging core: what producers and consumers ask of a broker, whatever protocol they speak
(the role of RocketMQ 5's MessagingProcessor).

The remoting processors (``broker/server/*_processor.py``) and the gRPC service (``broker/grpc``)
both call it, so a rule lives here once: which topic a send may create and how a send is checked and
stored, who may consume what, how a pull reads, waits for new messages and reads again, how a POP
does the same and how its messages are acked, hidden longer or given up on, how offsets are
answered, how a transaction ends.

| module | holds |
|---|---|
| ``core`` | ``MessagingCore`` and ``BrokerParts``, the parts of the broker it names |
| ``send`` | ``SendService``: checks in RocketMQ's order, the records, the append, flush and slave waits |
"""
