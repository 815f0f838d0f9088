import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { kafkaSh, processGone } from '../support/kafka-script.ts';
import { freePort } from '../support/service-process.ts';
import { waitFor } from '../support/wait.ts';

/** Runs scripts/kafka.sh against a private broker (own ports and state dir), never the shared one on 19092. */
test('scripts/kafka.sh: a broker killed with SIGKILL starts again on its data, under the same cluster id, its SCRAM user kept; `up` restarts a broker running on an older config', { timeout: 300_000 }, async () => {
  const stateRoot = mkdtempSync('/tmp/pin-kafka-script-');
  const env = {
    PIN_STATE_DIR: stateRoot,
    KAFKA_PORT: String(await freePort()),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
    KAFKA_SASL_PORT: String(await freePort()),
    // Not the default password: the script must use the one it is given.
    KAFKA_SCRAM_USER: 'pin',
    KAFKA_SCRAM_PASSWORD: 'script-test-secret',
  };
  const state = join(stateRoot, 'kafka');
  const pidOf = () => Number(readFileSync(join(state, 'kafka.pid'), 'utf8'));
  /** The id the data dir was formatted with (Kafka's own record of it). */
  const clusterIdOfData = () => /^cluster\.id=(.+)$/m.exec(readFileSync(join(state, 'data/meta.properties'), 'utf8'))?.[1];
  try {
    const first = await kafkaSh('up', env);
    assert.equal(first.code, 0, first.out);
    assert.match(first.out, new RegExp(`export KAFKA_BROKERS=127\\.0\\.0\\.1:${env.KAFKA_PORT}`));
    assert.match(first.out, new RegExp(`export KAFKA_SASL_BROKERS=127\\.0\\.0\\.1:${env.KAFKA_SASL_PORT}`));
    const clusterId = readFileSync(join(state, 'cluster.id'), 'utf8').trim();
    // Kafka's own generator: 16 random bytes as base64url, never starting with '-'.
    assert.match(clusterId, /^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
    assert.equal(clusterIdOfData(), clusterId, 'the data dir was formatted with the kept id');

    // Something the restarted broker must still have: a topic in its metadata log.
    const admin = new Kafka({ brokers: [`127.0.0.1:${env.KAFKA_PORT}`], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'kept-across-crash', numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();

    const pid = pidOf();
    process.kill(pid, 'SIGKILL'); // a crash: the data dir stays as the broker left it
    await waitFor('the killed broker to be gone', () => processGone(pid), 10_000);

    const second = await kafkaSh('up', env);
    assert.equal(second.code, 0, second.out);
    assert.match(second.out, /ready on/);
    assert.notEqual(pidOf(), pid, 'a new broker process');
    assert.equal(readFileSync(join(state, 'cluster.id'), 'utf8').trim(), clusterId);
    assert.equal(clusterIdOfData(), clusterId, 'the same data, not a reformatted dir');
    assert.match(second.out, new RegExp(`export KAFKA_SASL_BROKERS=127\\.0\\.0\\.1:${env.KAFKA_SASL_PORT}`));
    // Through the SASL listener: the SCRAM user written at format time is still in the kept metadata log.
    const again = new Kafka({
      brokers: [`127.0.0.1:${env.KAFKA_SASL_PORT}`],
      logLevel: logLevel.NOTHING,
      sasl: { mechanism: 'scram-sha-256', username: env.KAFKA_SCRAM_USER, password: env.KAFKA_SCRAM_PASSWORD },
    }).admin();
    await again.connect();
    try {
      assert.ok((await again.listTopics()).includes('kept-across-crash'), 'the topic made before the crash is still there');
    } finally {
      await again.disconnect();
    }

    // `up` again: a broker running on this script's config is left alone…
    const running = pidOf();
    const third = await kafkaSh('up', env);
    assert.equal(third.code, 0, third.out);
    assert.match(third.out, /already running/);
    assert.equal(pidOf(), running, 'the same broker process');
    // …one running on another config (an older kafka.sh wrote it) is restarted on this one.
    const properties = join(state, 'server.properties');
    appendFileSync(properties, 'group.min.session.timeout.ms=6000\n');
    const fourth = await kafkaSh('up', env);
    assert.equal(fourth.code, 0, fourth.out);
    assert.match(fourth.out, /older server\.properties: restarting/);
    assert.notEqual(pidOf(), running, 'a new broker process');
    assert.doesNotMatch(readFileSync(properties, 'utf8'), /session\.timeout\.ms=6000/, 'the config this script writes');
  } finally {
    const down = await kafkaSh('down', env);
    assert.equal(down.code, 0, down.out);
    assert.ok(!['data', 'cluster.id', 'scram.user'].some((f) => existsSync(join(state, f))), '`down` removes the data, its id and SCRAM mark');
    rmSync(stateRoot, { recursive: true, force: true });
  }
});
