import { Type } from '@sinclair/typebox';
import { Bool, type SettingsOf } from '../types/index.ts';
import { EVENTS_DEFAULTS } from './defaults.ts';

/** The event bus: Kafka brokers (set = Kafka, unset = the in-process bus), client id, topic prefix (tests) and transport security. One TypeBox field per setting is its one source of default, bounds and unit (config.ts reads them from the environment). */
export const eventBusSettings = {
  KAFKA_BROKERS: Type.Optional(
    Type.String({
      pattern: '^[^,\\s]+(,[^,\\s]+)*$',
      examples: ['127.0.0.1:19092'], description: 'Comma-separated host:port list; unset = in-process event bus (no Kafka)',
    }),
  ),
  KAFKA_CLIENT_ID: Type.String({ default: EVENTS_DEFAULTS.kafkaClientId, minLength: 1, description: 'Kafka client id' }),
  KAFKA_CLIENT: Type.Union([Type.Literal('kafkajs'), Type.Literal('platformatic')], {
    default: 'kafkajs',
    description: 'Kafka client library behind the event bus: kafkajs, or @platformatic/kafka for trials only — the whole fault suite has not passed on it with its read-committed consumer patched (docs/architecture.md, "Kafka client")',
  }),
  KAFKA_TOPIC_PREFIX: Type.String({
    default: '',
    description: 'Prefix put before every topic and consumer group name (environments sharing one Kafka cluster; each test file uses its own)',
  }),
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
