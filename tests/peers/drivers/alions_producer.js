'use strict';
// Sends --count messages with the ali-ons producer and reports each result as a JSON line.
//
//   node alions_producer.js <namesrv host:port> <topic> [--group G] [--count N] [--tags A,B]
//        [--key-prefix K] [--body TEXT] [--body-size BYTES] [--delay-level L] [--timeout S]
//
// Message i (0-based) gets tags[i % len(tags)], keys "<key-prefix>-<i>" and the body
// "<body>-<i>" padded with '.' up to --body-size bytes (ali-ons deflates bodies >= 4 KiB).
// Events: sent {index,msgId,queueId,queueOffset,status,tags,keys}, send_error {index,error,name,code},
// error {error,name} (emitted by the client), summary {sent,failed,count,elapsedMs,ok}.

const common = require('./_common');
const { emit } = common;

const script = __filename;
const { namesrv, topic, values } = common.parseCommandLine(script,
  [ 'group', 'count', 'tags', 'key-prefix', 'body', 'body-size', 'delay-level', 'timeout' ],
  process.argv.slice(2));
const opts = common.check(script, () => ({
  group: values.group || 'rmqkit_peer_producer',
  count: common.toInt('count', values.count, 0) ?? 1,
  tags: values.tags ? values.tags.split(',') : [],
  keyPrefix: values['key-prefix'],
  body: values.body ?? 'hello',
  bodySize: common.toInt('body-size', values['body-size'], 0) ?? 0,
  delayLevel: common.toInt('delay-level', values['delay-level'], 0) ?? 0,
  timeout: common.toSeconds('timeout', values.timeout) ?? 30,
}));

const { Producer, Message } = common.loadAliOns();
const started = Date.now();
let sent = 0;
let failed = 0;
let finished = false;

function finish(ok) {
  if (finished) return;
  finished = true;
  emit('summary', { sent, failed, count: opts.count, elapsedMs: Date.now() - started, ok });
  // the client keeps timers (heartbeat, route polling) alive even after close()
  process.exit(ok ? 0 : 1);
}

function bodyFor(index) {
  let text = `${opts.body}-${index}`;
  if (text.length < opts.bodySize) text += '.'.repeat(opts.bodySize - text.length);
  return Buffer.from(text);
}

const deadline = setTimeout(() => {
  emit('error', { name: 'DriverTimeout', error: `producer did not finish within ${opts.timeout}s` });
  finish(false);
}, opts.timeout * 1000);
deadline.unref();

(async () => {
  const producer = new Producer({
    httpclient: {}, // asserted by the constructor, unused when nameSrv is given
    nameSrv: namesrv,
    producerGroup: opts.group,
    accessKey: process.env.RMQ_ACCESS_KEY, // ACL signing when both are set (tests/broker/acl)
    secretKey: process.env.RMQ_SECRET_KEY,
    logger: common.makeLogger(),
    sendMsgTimeout: 3000,
  });
  producer.on('error', err => emit('error', common.errorFields(err)));
  await producer.ready();
  emit('ready', { client: 'ali-ons', group: opts.group, clientId: producer.clientId });

  for (let index = 0; index < opts.count; index++) {
    const tags = opts.tags.length ? opts.tags[index % opts.tags.length] : null;
    const msg = new Message(topic, tags, bodyFor(index));
    // without this ali-ons sends the property TAGS=null (the string "null")
    if (tags === null) delete msg.properties.TAGS;
    const keys = opts.keyPrefix !== undefined ? `${opts.keyPrefix}-${index}` : null;
    if (keys !== null) msg.keys = [ keys ];
    if (opts.delayLevel > 0) msg.delayTimeLevel = opts.delayLevel;
    try {
      const result = await producer.send(msg);
      sent++;
      emit('sent', {
        index,
        msgId: result.msgId,
        queueId: result.messageQueue ? Number(result.messageQueue.queueId) : null,
        brokerName: result.messageQueue ? result.messageQueue.brokerName : null,
        queueOffset: result.queueOffset,
        status: result.sendStatus,
        tags,
        keys,
      });
    } catch (err) {
      failed++;
      emit('send_error', Object.assign({ index }, common.errorFields(err)));
    }
  }
  try {
    await producer.close();
  } catch (err) {
    emit('error', Object.assign({ during: 'close' }, common.errorFields(err)));
  }
  finish(failed === 0);
})().catch(err => {
  emit('error', Object.assign({ during: 'run' }, common.errorFields(err)));
  finish(false);
});
