// rocketmq-client-nodejs 1.0.8 producer: prints JSON lines like the other drivers.
// node node5_producer.js --endpoints E --topic T --count N [--tag X] [--key-prefix k] [--kind normal|fifo|delay]
'use strict';
const { parseArgs } = require('node:util');

function emit(event, fields) {
  process.stdout.write(JSON.stringify({ event, t: Date.now() / 1000, ...fields }) + '\n');
}

async function main() {
  const { values } = parseArgs({
    options: {
      endpoints: { type: 'string' }, topic: { type: 'string' }, count: { type: 'string', default: '1' },
      tag: { type: 'string' }, 'key-prefix': { type: 'string' }, kind: { type: 'string', default: 'normal' },
      'body-prefix': { type: 'string', default: 'node5-' }, 'delay-ms': { type: 'string', default: '2000' },
    },
  });
  let lib;
  try {
    lib = require('rocketmq-client-nodejs');
  } catch (err) {
    emit('error', { stage: 'import', error: String(err) });
    process.exit(3);
  }
  const producer = new lib.Producer({ endpoints: values.endpoints, topic: values.topic, logger: quietLogger() });
  let sent = 0;
  try {
    await producer.startup();
    emit('started', {});
    for (let i = 0; i < Number(values.count); i++) {
      const msg = { topic: values.topic, body: Buffer.from(`${values['body-prefix']}${i}`) };
      if (values.tag) msg.tag = values.tag;
      if (values['key-prefix']) msg.keys = [`${values['key-prefix']}${i}`];
      if (values.kind === 'fifo') msg.messageGroup = `group-${i % 2}`;
      if (values.kind === 'delay') msg.delay = Number(values['delay-ms']);
      const receipt = await producer.send(msg);
      sent++;
      emit('sent', { index: i, message_id: receipt.messageId, offset: Number(receipt.offset ?? -1) });
    }
  } catch (err) {
    emit('error', { stage: 'send', error: String(err && err.stack || err) });
  } finally {
    try { await producer.shutdown(); } catch (err) { emit('error', { stage: 'shutdown', error: String(err) }); }
  }
  const ok = sent === Number(values.count);
  emit('summary', { sent, ok });
  process.exit(ok ? 0 : 1);
}

function quietLogger() {
  const noop = () => {};
  return { info: noop, warn: noop, debug: noop, error: (...a) => process.stderr.write(a.map(String).join(' ') + '\n') };
}

main();
