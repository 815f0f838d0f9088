import { EVENTS_DEFAULTS } from './defaults.ts';
import type { Logger } from '../observability/logger.ts';
import type { TopicSpec } from './bus.ts';
import type { KafkaSecurity } from './kafka-security.ts';

/** The Kafka bus's options, whichever client runs it (kafka-bus.ts, platformatic-bus.ts). */

/** The Kafka client library behind the bus (KAFKA_CLIENT): kafkajs, or @platformatic/kafka (platformatic-bus.ts). */
export type KafkaClientName = 'kafkajs' | 'platformatic';

export interface KafkaBusOptions {
  /** Default kafkajs. */
  client?: KafkaClientName;
  /** host:port list (KAFKA_BROKERS). */
  brokers: readonly string[];
  /** KAFKA_CLIENT_ID. */
  clientId: string;
  /** TLS and SASL (`kafkaSecurity(settings)`), used by the producer, every consumer and the admin client alike. */
  security?: KafkaSecurity;
  log: Logger;
  /** Created at start if missing: `topicsToCreate(EVENT_TOPICS, …)`. Default none. */
  topics?: readonly TopicSpec[];
  /** TCP connect timeout; short, so a dead broker shows up as 'down' at once. */
  connectionTimeoutMs?: number;
  /** Broker request timeout. */
  requestTimeoutMs?: number;
  /** Longest a health check waits. */
  healthTimeoutMs?: number;
  /**
   * Largest sum of key+value+header bytes per produce request; a bigger publish is split into
   * requests sent one after another (order kept). Must stay under the broker's
   * `message.max.bytes` (1 MiB by default), which bounds one partition's record batch.
   */
  maxRequestBytes?: number;
  /** kafkajs fetch long-poll of idle consumers; bounds stop and resume latency (kafka-consumer.ts's default when unset). */
  consumerMaxWaitMs?: number;
  /**
   * Group session timeout: how long a member that died without leaving (SIGKILL) holds its
   * partitions. Default kafkajs's 30,000; the broker's group.min.session.timeout.ms (6,000) bounds it below.
   */
  consumerSessionTimeoutMs?: number;
  /** A consumer's maxAttempts unless it sets its own (KERNEL_TUNING.kafkaConsumerMaxAttempts). */
  consumerMaxAttempts?: number;
  /** How often consumer lag is read from the broker (KERNEL_TUNING.kafkaLagPollingIntervalMs). */
  lagPollIntervalMs?: number;
}

/** The options' values when unset. */
export const KAFKA_BUS_DEFAULTS = {
  connectionTimeoutMs: EVENTS_DEFAULTS.kafkaConnectionTimeoutMs,
  requestTimeoutMs: EVENTS_DEFAULTS.kafkaRequestTimeoutMs,
  healthTimeoutMs: EVENTS_DEFAULTS.kafkaHealthTimeoutMs,
  maxRequestBytes: EVENTS_DEFAULTS.kafkaMaxRequestBytes,
  lagPollIntervalMs: EVENTS_DEFAULTS.kafkaLagPollingIntervalMs,
} as const;

/** The options given, without the keys set to undefined (which would hide a default). */
export function definedOf<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** The options with every default filled in. */
export type ResolvedKafkaBusOptions = KafkaBusOptions & Required<Pick<KafkaBusOptions, keyof typeof KAFKA_BUS_DEFAULTS>>;

export function resolveKafkaBusOptions(opts: KafkaBusOptions): ResolvedKafkaBusOptions {
  return { ...KAFKA_BUS_DEFAULTS, ...definedOf(opts) };
}
