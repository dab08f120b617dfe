"""Access control: RocketMQ's plain ACL 1.0 (accounts with an AccessKey and a SecretKey, topic and
group permissions, IP white lists) and TLS contexts.

Sans-IO except :mod:`broker.acl.config` (reads and writes the ACL file) and :mod:`broker.acl.tls`
(loads certificates). Servers hook it in through :mod:`broker.acl.remoting_hook`; clients sign with
:mod:`broker.acl.signer`.
"""
