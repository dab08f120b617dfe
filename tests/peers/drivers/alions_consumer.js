'use strict';
// Runs an ali-ons clustering push consumer and reports every delivery as a JSON line.
//
//   node alions_consumer.js <namesrv host:port> <topic> [--group G] [--tags EXPR] [--expect N]
//        [--timeout S] [--fail-first N] [--from first|last|timestamp] [--linger S]
//
// --fail-first N: the first N deliveries return ACTION_RETRY, so the client sends them back
//   (CONSUMER_SEND_MSG_BACK) and they come back through %RETRY%<group>.
// --expect N: stop (exit 0) once N deliveries were consumed successfully, after --linger seconds
//   more (to catch duplicates); exit 1 if --timeout passes first. Without --expect, consume until
//   --timeout and exit 0.
// Events: ready, assigned {queues:[{topic,brokerName,queueId,nextOffset}]}, received {topic,queueTopic,
// tags,keys,body(base64),msgId,queueId,queueOffset,commitLogOffset,reconsumeTimes,storeHost,
// bornTimestamp,storeTimestamp,properties,action:"ok"|"fail"}, error {error,name,code}, summary.

const common = require('./_common');
const { emit } = common;

const script = __filename;
const { namesrv, topic, values } = common.parseCommandLine(script,
  [ 'group', 'tags', 'expect', 'timeout', 'fail-first', 'from', 'linger' ],
  process.argv.slice(2));
const FROM = {
  first: 'CONSUME_FROM_FIRST_OFFSET',
  last: 'CONSUME_FROM_LAST_OFFSET',
  timestamp: 'CONSUME_FROM_TIMESTAMP',
};
const opts = common.check(script, () => {
  const from = values.from ?? 'first';
  if (!FROM[from]) throw new common.UsageError(`--from must be first, last or timestamp, got ${JSON.stringify(from)}`);
  return {
    group: values.group || 'rmqkit_peer_consumer',
    tags: values.tags ?? '*',
    expect: common.toInt('expect', values.expect, 1),
    timeout: common.toSeconds('timeout', values.timeout) ?? 30,
    failFirst: common.toInt('fail-first', values['fail-first'], 0) ?? 0,
    from: FROM[from],
    linger: values.linger === undefined ? 0 : common.toSeconds('linger', values.linger),
  };
});

const { Consumer } = common.loadAliOns();
const started = Date.now();
let deliveries = 0;
let consumed = 0;
let failedOnPurpose = 0;
let errors = 0;
let consumer = null;
let stopping = false;

async function stop(ok, reason) {
  if (stopping) return;
  stopping = true;
  if (consumer) {
    // close() persists offsets (UPDATE_CONSUMER_OFFSET) and unregisters; never wait forever for it
    const closing = consumer.close().catch(err => emit('error', Object.assign({ during: 'close' }, common.errorFields(err))));
    await Promise.race([ closing, common.sleep(5000) ]);
  }
  emit('summary', {
    received: deliveries,
    consumed,
    failedOnPurpose,
    errors,
    expect: opts.expect ?? null,
    reason,
    elapsedMs: Date.now() - started,
    ok,
  });
  process.exit(ok ? 0 : 1);
}

setTimeout(() => {
  if (opts.expect === undefined) {
    stop(true, 'timeout');
  } else {
    emit('error', { name: 'DriverTimeout', error: `consumed ${consumed} of ${opts.expect} messages within ${opts.timeout}s` });
    stop(false, 'timeout');
  }
}, opts.timeout * 1000);

function assignedQueues() {
  const queues = [];
  for (const entry of consumer.processQueueTable.values()) {
    const mq = entry.messageQueue;
    queues.push({ topic: mq.topic, brokerName: mq.brokerName, queueId: Number(mq.queueId), nextOffset: entry.nextOffset });
  }
  return queues;
}

(async () => {
  consumer = new Consumer({
    httpclient: {}, // asserted by the constructor, unused when nameSrv is given
    nameSrv: namesrv,
    consumerGroup: opts.group,
    accessKey: process.env.RMQ_ACCESS_KEY, // ACL signing when both are set (tests/broker/acl)
    secretKey: process.env.RMQ_SECRET_KEY,
    consumeFromWhere: opts.from,
    logger: common.makeLogger(),
  });
  consumer.on('error', err => {
    errors++;
    emit('error', common.errorFields(err));
  });
  const announce = changedTopic => emit('assigned', { changedTopic, queues: assignedQueues() });
  consumer.on(`topic_${topic}_queue_changed`, () => announce(topic));
  consumer.on(`topic_%RETRY%${opts.group}_queue_changed`, () => announce(`%RETRY%${opts.group}`));

  await consumer.ready();
  emit('ready', { client: 'ali-ons', group: opts.group, clientId: consumer._mqClient.clientId });

  consumer.subscribe(topic, opts.tags, async (msg, mq) => {
    const fail = deliveries < opts.failFirst;
    deliveries++;
    emit('received', {
      topic: msg.topic,
      // retried messages reach the handler through ali-ons' %RETRY% wrapper, which passes no queue
      queueTopic: mq ? mq.topic : `%RETRY%${opts.group}`,
      tags: msg.tags ?? null,
      keys: msg.keys ?? null,
      body: Buffer.from(msg.body || []).toString('base64'),
      msgId: msg.msgId,
      queueId: msg.queueId,
      queueOffset: msg.queueOffset,
      commitLogOffset: msg.commitLogOffset,
      reconsumeTimes: msg.reconsumeTimes,
      storeHost: msg.storeHost,
      bornTimestamp: msg.bornTimestamp,
      storeTimestamp: msg.storeTimestamp,
      properties: msg.properties,
      action: fail ? 'fail' : 'ok',
    });
    if (fail) {
      failedOnPurpose++;
      return Consumer.ACTION_RETRY;
    }
    consumed++;
    if (opts.expect !== undefined && consumed === opts.expect) {
      setTimeout(() => stop(true, 'expected'), opts.linger * 1000);
    }
    return undefined;
  });
})().catch(err => {
  errors++;
  emit('error', Object.assign({ during: 'start' }, common.errorFields(err)));
  stop(false, 'start_failed');
});
