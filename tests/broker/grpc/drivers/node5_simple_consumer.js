// rocketmq-client-nodejs 1.0.8 SimpleConsumer: receive and ack until --expect distinct messages.
// node node5_simple_consumer.js --endpoints E --topic T --group G --expect N [--tag '*'] [--timeout 30]
'use strict';
const { parseArgs } = require('node:util');

function emit(event, fields) {
  process.stdout.write(JSON.stringify({ event, t: Date.now() / 1000, ...fields }) + '\n');
}

async function main() {
  const { values } = parseArgs({
    options: {
      endpoints: { type: 'string' }, topic: { type: 'string' }, group: { type: 'string' },
      expect: { type: 'string' }, tag: { type: 'string', default: '*' }, timeout: { type: 'string', default: '30' },
      invisible: { type: 'string', default: '15000' },
    },
  });
  let lib;
  try {
    lib = require('rocketmq-client-nodejs');
  } catch (err) {
    emit('error', { stage: 'import', error: String(err) });
    process.exit(3);
  }
  const noop = () => {};
  const consumer = new lib.SimpleConsumer({
    endpoints: values.endpoints, consumerGroup: values.group, awaitDuration: 3000,
    subscriptions: new Map().set(values.topic, values.tag),
    logger: { info: noop, warn: noop, debug: noop, error: (...a) => process.stderr.write(a.map(String).join(' ') + '\n') },
  });
  const acked = new Set();
  try {
    await consumer.startup();
    emit('started', {});
    const deadline = Date.now() + Number(values.timeout) * 1000;
    while (acked.size < Number(values.expect) && Date.now() < deadline) {
      let messages = [];
      try {
        messages = await consumer.receive(16, Number(values.invisible));
      } catch (err) {
        if (!String(err).includes('MESSAGE_NOT_FOUND') && !String(err).includes('no new message')) {
          emit('receive_error', { error: String(err) });
        }
        continue;
      }
      for (const m of messages) {
        emit('received', {
          message_id: m.messageId, topic: m.topic, tag: m.tag ?? null, keys: m.keys,
          message_group: m.messageGroup ?? null, delivery_attempt: m.deliveryAttempt ?? null,
          body: m.body.toString('utf-8'), properties: Object.fromEntries(m.properties || []),
        });
        await consumer.ack(m);
        acked.add(m.messageId);
        emit('acked', { message_id: m.messageId });
      }
    }
  } catch (err) {
    emit('error', { stage: 'consume', error: String(err && err.stack || err) });
  } finally {
    try { await consumer.shutdown(); } catch (err) { emit('error', { stage: 'shutdown', error: String(err) }); }
  }
  const ok = acked.size >= Number(values.expect);
  emit('summary', { acked: acked.size, ok });
  process.exit(ok ? 0 : 1);
}

main();
