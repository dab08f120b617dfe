"""The RocketMQ 5 gRPC API (``apache.rocketmq.v2.MessagingService``) served on top of the broker core."""
