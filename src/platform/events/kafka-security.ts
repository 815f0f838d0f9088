import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext, type ConnectionOptions } from 'node:tls';
import type { SASLOptions } from 'kafkajs';
import type { Logger } from '../observability/logger.ts';
import { kafkaErrorTree, kafkaShownError } from './kafka-util.ts';
import type { EventBusSettings } from './settings.ts';

/** TLS and SASL towards the brokers: the settings' cross-field rules, the kafkajs options, and what a refusal looks like. */

export type KafkaSecuritySettings = Partial<
  Pick<
    EventBusSettings,
    'KAFKA_SSL' | 'KAFKA_SSL_CA_FILE' | 'KAFKA_SSL_CERT_FILE' | 'KAFKA_SSL_KEY_FILE' | 'KAFKA_SASL_MECHANISM' | 'KAFKA_SASL_USERNAME' | 'KAFKA_SASL_PASSWORD'
  >
>;

export interface KafkaSecurity {
  /** kafkajs `ssl`: true = TLS with the system CAs. */
  ssl?: ConnectionOptions | true;
  sasl?: SASLOptions;
}

const FILES = ['KAFKA_SSL_CA_FILE', 'KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE'] as const;

/** The rules one field's schema cannot say; loadConfig reports them with every other problem. */
export function kafkaSecurityProblems(s: KafkaSecuritySettings): string[] {
  const problems: string[] = [];
  if (s.KAFKA_SASL_MECHANISM) {
    for (const name of ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'] as const) {
      if (!s[name]) problems.push(`${name}: required with KAFKA_SASL_MECHANISM=${s.KAFKA_SASL_MECHANISM}`);
    }
  } else if (s.KAFKA_SASL_USERNAME || s.KAFKA_SASL_PASSWORD) {
    // Credentials that would silently go unused.
    problems.push('KAFKA_SASL_MECHANISM: required with KAFKA_SASL_USERNAME / KAFKA_SASL_PASSWORD (plain, scram-sha-256 or scram-sha-512)');
  }
  for (const name of FILES) if (s[name] && !s.KAFKA_SSL) problems.push(`${name}: needs KAFKA_SSL=true`);
  if (!s.KAFKA_SSL_CERT_FILE !== !s.KAFKA_SSL_KEY_FILE) {
    problems.push(`${s.KAFKA_SSL_CERT_FILE ? 'KAFKA_SSL_KEY_FILE' : 'KAFKA_SSL_CERT_FILE'}: a client certificate needs both KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE`);
  }
  return problems;
}

function readSetting(name: (typeof FILES)[number], path: string | undefined): Buffer | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`${name}: cannot read ${path} (${(err as Error).message})`, { cause: err });
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** Node ignores a CA file without a certificate in it (then no broker is trusted, with no word why). */
function checkCaFile(ca: Buffer): void {
  const blocks = ca.toString('latin1').match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new Error('no PEM certificate in it');
  for (const block of blocks) new X509Certificate(block);
}

/**
 * The kafkajs options, the files read now: an unreadable file, or PEM that Node cannot load (or a
 * key that is not the certificate's), fails start-up naming its setting instead of every later connect.
 */
export function kafkaSecurity(s: KafkaSecuritySettings): KafkaSecurity {
  const out: KafkaSecurity = {};
  if (s.KAFKA_SSL) {
    const ca = readSetting('KAFKA_SSL_CA_FILE', s.KAFKA_SSL_CA_FILE);
    const cert = readSetting('KAFKA_SSL_CERT_FILE', s.KAFKA_SSL_CERT_FILE);
    const key = readSetting('KAFKA_SSL_KEY_FILE', s.KAFKA_SSL_KEY_FILE);
    const tls: ConnectionOptions = { ...(ca ? { ca: [ca] } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) };
    try {
      if (ca) checkCaFile(ca);
    } catch (err) {
      throw new Error(`KAFKA_SSL_CA_FILE: not usable as TLS material (${(err as Error).message})`, { cause: err });
    }
    try {
      createSecureContext(tls);
    } catch (err) {
      const names = FILES.filter((n) => s[n]).join(' / ');
      throw new Error(`${names}: not usable as TLS material (${(err as Error).message})`, { cause: err });
    }
    out.ssl = Object.keys(tls).length > 0 ? tls : true;
  }
  if (s.KAFKA_SASL_MECHANISM && s.KAFKA_SASL_USERNAME && s.KAFKA_SASL_PASSWORD) {
    out.sasl = { mechanism: s.KAFKA_SASL_MECHANISM, username: s.KAFKA_SASL_USERNAME, password: s.KAFKA_SASL_PASSWORD } as SASLOptions;
  }
  return out;
}

/** Node's codes for a broker certificate the configured CAs do not vouch for. */
const TLS_VERIFY_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** OpenSSL's alerts from a broker that refuses the client certificate (none, or not from a CA it trusts). */
const TLS_REFUSED_ALERT = /^ERR_SSL_TLSV1\d?_ALERT_(BAD_CERTIFICATE|CERTIFICATE_REQUIRED|UNKNOWN_CA|CERTIFICATE_UNKNOWN)$|^ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE$/;

/**
 * The brokers refused this replica's credentials (SASL, or its TLS client certificate), or TLS found their certificate untrusted:
 * this replica's configuration is wrong, unlike an outage, and retrying does not mend it by itself.
 */
export function isKafkaCredentialFailure(err: unknown): boolean {
  for (const e of kafkaErrorTree(err)) {
    if (!(e instanceof Error)) continue;
    if (e.name === 'KafkaJSSASLAuthenticationError') return true;
    // @platformatic/kafka: its AuthenticationError, or the broker's SASL_AUTHENTICATION_FAILED response.
    if ((e as { code?: unknown }).code === 'PLT_KFK_AUTHENTICATION' || (e as { apiId?: unknown }).apiId === 'SASL_AUTHENTICATION_FAILED') return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (TLS_VERIFY_CODES.has(code) || TLS_REFUSED_ALERT.test(code))) return true;
  }
  return false;
}

/**
 * The brokers' refusal of this replica's credentials, for /health/ready: set by a connect they refused
 * (logged once per refusal, naming the settings, never the password), cleared by the next that succeeds.
 */
export function createRefusalTracker(security: KafkaSecurity | undefined, log: Logger) {
  const sasl = security?.sasl;
  const credentials = {
    ssl: security?.ssl !== undefined,
    ...(sasl ? { saslMechanism: sasl.mechanism, ...('username' in sasl ? { saslUsername: sasl.username } : {}) } : {}),
  };
  let refusal: string | undefined;
  return {
    succeeded(): void {
      if (refusal === undefined) return;
      refusal = undefined;
      log.info(credentials, "kafka accepts this replica's credentials again");
    },
    /** Call with any connect error: a credential refusal is remembered and logged once. */
    failed(err: unknown): void {
      if (!isKafkaCredentialFailure(err)) return;
      // The reason itself, not a client's "metadata failed 4 times" around it (kafka-util.ts).
      const cause = kafkaShownError(err) as Error;
      // Once per refusal, not per retry or health check; the bus start's own retries log each attempt.
      if (refusal === undefined) {
        log.error(
          { ...credentials, err: cause },
          'kafka refused this replica: check KAFKA_SASL_MECHANISM / KAFKA_SASL_USERNAME / KAFKA_SASL_PASSWORD (SASL) or KAFKA_SSL_CA_FILE (TLS); /health/ready is 503 until a connect succeeds',
        );
      }
      refusal = cause.message;
    },
    refusal: (): string | undefined => refusal,
  };
}
