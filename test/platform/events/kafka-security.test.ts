import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type TLSSocket } from 'node:tls';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../../src/config.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import { kafkaSecurity } from '../../../src/platform/events/kafka-security.ts';
import { waitFor } from '../../support/wait.ts';
import { testKafkaClient } from '../../support/kafka-client.ts';
import { testLog } from './support.ts';
import { configProblems } from '../../support/config.ts';

/** The KAFKA_SSL_* / KAFKA_SASL_* settings: what start-up refuses, and TLS reaching a real TLS peer. */

const problemsOf = configProblems;

describe('kafka security settings', () => {
  test('a SASL mechanism without username or password is refused naming each missing setting; the password is never echoed', () => {
    assert.deepEqual(problemsOf({ KAFKA_SASL_MECHANISM: 'scram-sha-512' }), [
      'KAFKA_SASL_USERNAME: required with KAFKA_SASL_MECHANISM=scram-sha-512',
      'KAFKA_SASL_PASSWORD: required with KAFKA_SASL_MECHANISM=scram-sha-512',
    ]);
    assert.deepEqual(problemsOf({ KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_PASSWORD: 'hunter2-hunter2' }), [
      'KAFKA_SASL_USERNAME: required with KAFKA_SASL_MECHANISM=plain',
    ]);
    const unused = problemsOf({ KAFKA_SASL_USERNAME: 'pin', KAFKA_SASL_PASSWORD: 'hunter2-hunter2' });
    assert.equal(unused.length, 1);
    assert.match(unused[0]!, /^KAFKA_SASL_MECHANISM: required with KAFKA_SASL_USERNAME/);
    const unknown = problemsOf({ KAFKA_SASL_MECHANISM: 'gssapi', KAFKA_SASL_USERNAME: 'pin', KAFKA_SASL_PASSWORD: 'hunter2-hunter2' });
    assert.ok(unknown.some((p) => p.startsWith('KAFKA_SASL_MECHANISM:')), unknown.join('; '));
    assert.ok(!unknown.join('\n').includes('hunter2'));
    assert.deepEqual(problemsOf({ KAFKA_SASL_MECHANISM: 'scram-sha-256', KAFKA_SASL_USERNAME: 'pin', KAFKA_SASL_PASSWORD: 'x' }), []);
  });

  test('TLS files need KAFKA_SSL=true, and a client certificate needs its key', () => {
    assert.deepEqual(problemsOf({ KAFKA_SSL_CA_FILE: '/etc/ca.pem' }), ['KAFKA_SSL_CA_FILE: needs KAFKA_SSL=true']);
    assert.deepEqual(problemsOf({ KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: '/etc/client.pem' }), [
      'KAFKA_SSL_KEY_FILE: a client certificate needs both KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE',
    ]);
    assert.equal(loadConfig({ KAFKA_SSL: 'true' }).KAFKA_SSL, true);
    assert.deepEqual(kafkaSecurity({ KAFKA_SSL: true }), { ssl: true }, 'TLS with the system CAs');
    assert.deepEqual(kafkaSecurity({}), {}, 'neither by default');
  });

  test('an unreadable or unusable TLS file fails at start naming its setting', () => {
    const dir = mkdtempSync('/tmp/pin-kafka-tls-');
    after(() => rmSync(dir, { recursive: true, force: true }));
    assert.throws(
      () => kafkaSecurity({ KAFKA_SSL: true, KAFKA_SSL_CA_FILE: join(dir, 'missing.pem') }),
      new RegExp(`^Error: KAFKA_SSL_CA_FILE: cannot read ${dir}/missing\\.pem \\(ENOENT`),
    );
    writeFileSync(join(dir, 'garbage.pem'), 'not a certificate');
    assert.throws(
      () => kafkaSecurity({ KAFKA_SSL: true, KAFKA_SSL_CA_FILE: join(dir, 'garbage.pem') }),
      /^Error: KAFKA_SSL_CA_FILE: not usable as TLS material \(no PEM certificate in it\)/,
    );
    writeFileSync(join(dir, 'cut.pem'), '-----BEGIN CERTIFICATE-----\nMIIBcut\n-----END CERTIFICATE-----\n');
    assert.throws(() => kafkaSecurity({ KAFKA_SSL: true, KAFKA_SSL_CA_FILE: join(dir, 'cut.pem') }), /^Error: KAFKA_SSL_CA_FILE: not usable as TLS material/);
    assert.throws(
      () => kafkaSecurity({ KAFKA_SSL: true, KAFKA_SSL_CERT_FILE: join(dir, 'garbage.pem'), KAFKA_SSL_KEY_FILE: join(dir, 'garbage.pem') }),
      /^Error: KAFKA_SSL_CERT_FILE \/ KAFKA_SSL_KEY_FILE: not usable as TLS material/,
    );
  });
});

/** A CA, a server certificate for 127.0.0.1 and a client certificate it signed, plus a CA that signed neither. */
function makeCertificates(dir: string): void {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const ca of ['ca', 'other-ca']) openssl('req', '-x509', ...ec, '-keyout', `${ca}.key`, '-out', `${ca}.pem`, '-days', '2', '-subj', `/CN=${ca}`);
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  for (const [name, subject] of [['server', '/CN=127.0.0.1'], ['client', '/CN=pin-client']] as const) {
    openssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', 'san.ext');
  }
}

describe('kafka over TLS', () => {
  test('the bus connects with the configured CA and presents the client certificate; an untrusted broker certificate or a missing client certificate counts as refused', async () => {
    const dir = mkdtempSync('/tmp/pin-kafka-tls-');
    after(() => rmSync(dir, { recursive: true, force: true }));
    makeCertificates(dir);
    const file = (name: string) => readFileSync(join(dir, name));
    // A real TLS peer that requires a client certificate from our CA; it speaks no Kafka, so each
    // handshake is recorded and the connection closed.
    const clients: string[] = [];
    const server = createServer({ key: file('server.key'), cert: file('server.pem'), ca: file('ca.pem'), requestCert: true, rejectUnauthorized: true }, (socket: TLSSocket) => {
      clients.push(socket.getPeerCertificate().subject.CN as string);
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const broker = `127.0.0.1:${(server.address() as AddressInfo).port}`;

    const trusted = kafkaSecurity({
      KAFKA_SSL: true,
      KAFKA_SSL_CA_FILE: join(dir, 'ca.pem'),
      KAFKA_SSL_CERT_FILE: join(dir, 'client.pem'),
      KAFKA_SSL_KEY_FILE: join(dir, 'client.key'),
    });
    const bus = createKafkaBus({ client: testKafkaClient, brokers: [broker], clientId: 'tls-test', log: testLog, security: trusted });
    after(() => bus.stop());
    assert.equal(await bus.health(), 'down', 'no Kafka behind the handshake');
    await waitFor('the TLS handshake with the client certificate', () => clients.includes('pin-client'));
    assert.equal(bus.credentialsRefused(), undefined, 'a closed connection is not a refusal');

    const untrusting = createKafkaBus({ client: testKafkaClient,
      brokers: [broker],
      clientId: 'tls-test',
      log: testLog,
      security: kafkaSecurity({ KAFKA_SSL: true, KAFKA_SSL_CA_FILE: join(dir, 'other-ca.pem') }),
    });
    after(() => untrusting.stop());
    assert.equal(await untrusting.health(), 'down');
    assert.match(untrusting.credentialsRefused() ?? '', /certificate/i, 'the broker certificate is not signed by KAFKA_SSL_CA_FILE');

    const anonymous = createKafkaBus({ client: testKafkaClient,
      brokers: [broker],
      clientId: 'tls-test',
      log: testLog,
      security: kafkaSecurity({ KAFKA_SSL: true, KAFKA_SSL_CA_FILE: join(dir, 'ca.pem') }),
    });
    after(() => anonymous.stop());
    assert.equal(await anonymous.health(), 'down');
    // @platformatic/kafka 2.12.1 reports the broker's certificate_required alert as "Connection closed"
    // (the TLS error is dropped), so on it this refusal looks like an outage: a known gap
    // (docs/architecture.md, "Kafka client"), asserted as it is so a fix upstream shows up here.
    if (testKafkaClient === 'kafkajs') assert.match(anonymous.credentialsRefused() ?? '', /certificate/i, 'the broker requires a client certificate and got none');
    else assert.equal(anonymous.credentialsRefused(), undefined, 'platformatic: the missing client certificate is not recognised yet');
  });
});
