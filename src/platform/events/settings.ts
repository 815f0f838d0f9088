import { Type } from '@sinclair/typebox';
import { Bool, Duration, Int, type SettingsOf } from '../types/index.ts';

/** The event bus: Kafka brokers, client id, topic prefix (tests) and partitions of created topics. One TypeBox field per setting is its one source of default, bounds and unit (config.ts reads them from the environment). */
export const eventBusSettings = {
  KAFKA_BROKERS: Type.Optional(
    Type.String({
      pattern: '^[^,\\s]+(,[^,\\s]+)*$',
      examples: ['127.0.0.1:19092'], description: 'Comma-separated host:port list; unset = in-process event bus (no Kafka)',
    }),
  ),
  KAFKA_CLIENT_ID: Type.String({ default: 'pin-platform-jobs', minLength: 1, description: 'Kafka client id' }),
  KAFKA_TOPIC_PREFIX: Type.String({
    default: '',
    description: 'Test-only: prefix put before every topic and consumer group name',
  }),
  KAFKA_TOPIC_PARTITIONS: Int({ default: 6, minimum: 1, maximum: 1000, description: 'Partitions of created topics' }),
  KAFKA_CONSUMER_MAX_ATTEMPTS: Int({
    default: 10,
    minimum: 1,
    maximum: 10_000,
    description:
      'Failed attempts in a row on one message (errors that may be its own: not an outage) after which a consumer dead-letters it as CONSUMER_RETRIES_EXHAUSTED; a consumer may set its own maxAttempts',
  }),
  KAFKA_LAG_POLLING_INTERVAL: Duration({
    default: '15s',
    minimum: '1s',
    maximum: '1h',
    description: 'How often consumer_lag and consumer_oldest_unconsumed_age_seconds are read from the broker (committed offsets vs high watermarks)',
  }),
  KAFKA_CONSUMER_SESSION_TIMEOUT: Duration({
    default: '30s',
    minimum: '1s',
    maximum: '5m',
    description:
      "How long a consumer that died without leaving (SIGKILL, a lost node) keeps its partitions before the group hands them on, which is also how long a replica restarted after a crash waits to join; the broker's group.min.session.timeout.ms bounds it below (6,000 by default; the local broker of scripts/kafka.sh allows 1,000). Heartbeats go every third of it, at most every 3 s",
  }),
  // No default on purpose: unset means "whatever KAFKA_BROKERS says" (local use keeps working), and
  // only an explicit `in-process` lets a replica on a real database run without Kafka.
  EVENT_BUS: Type.Optional(
    Type.Union([Type.Literal('kafka'), Type.Literal('in-process')], {
      examples: ['in-process'], description:
        'Explicit event bus choice; unset = kafka when KAFKA_BROKERS is set, in-process otherwise (refused at start with DATABASE_URL set)',
    }),
  ),
  // Transport security, the same for the producer, every consumer and the admin client (one kafkajs
  // instance). Cross-field rules are kafkaSecurityProblems() (kafka-security.ts); the files are read at start.
  KAFKA_SSL: Bool(false, 'Connect to the brokers over TLS (the system CAs unless KAFKA_SSL_CA_FILE is set)'),
  KAFKA_SSL_CA_FILE: Type.Optional(
    Type.String({ minLength: 1, examples: ['/etc/pin/kafka-ca.pem'], description: 'PEM file of the CA(s) that signed the brokers\' certificates (replaces the system CAs); needs KAFKA_SSL=true' }),
  ),
  KAFKA_SSL_CERT_FILE: Type.Optional(
    Type.String({ minLength: 1, examples: ['/etc/pin/kafka-client.pem'], description: 'PEM client certificate for brokers that require one (mutual TLS); needs KAFKA_SSL_KEY_FILE' }),
  ),
  KAFKA_SSL_KEY_FILE: Type.Optional(Type.String({ minLength: 1, examples: ['/etc/pin/kafka-client.key'], description: 'PEM private key of KAFKA_SSL_CERT_FILE (unencrypted)' })),
  KAFKA_SASL_MECHANISM: Type.Optional(
    Type.Union([Type.Literal('plain'), Type.Literal('scram-sha-256'), Type.Literal('scram-sha-512')], {
      examples: ['scram-sha-256'], description: 'SASL authentication to the brokers; unset = none. plain sends the password as is: only over KAFKA_SSL',
    }),
  ),
  KAFKA_SASL_USERNAME: Type.Optional(Type.String({ minLength: 1, examples: ['pin'], description: 'SASL user; required with KAFKA_SASL_MECHANISM' })),
  KAFKA_SASL_PASSWORD: Type.Optional(Type.String({ minLength: 1, examples: ['pin-local-secret'], description: 'SASL password; required with KAFKA_SASL_MECHANISM' })),
};

export type EventBusSettings = SettingsOf<typeof eventBusSettings>;
