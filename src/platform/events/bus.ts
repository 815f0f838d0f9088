import type { Db } from '../db/index.ts';
import type { Logger } from '../observability/logger.ts';
import type { Registry } from '../observability/metrics.ts';
import type { EventEnvelope, RawHeaders, WireMessage } from './envelope.ts';
import type { Backoff } from '../backoff/index.ts';

/**
 * The event bus port. Two adapters: Kafka (kafka-bus.ts) and in-process (in-process-bus.ts, used
 * only when KAFKA_BROKERS is unset). Topic names given to the port are physical names: the
 * test-only prefix is applied by the callers (outbox publisher, `subscribe` via `topicPrefix`).
 */
export interface EventBus {
  readonly kind: 'kafka' | 'in-process';
  /** Connects and creates the configured topics (idempotent). Call once before publishing. */
  start(): Promise<void>;
  /** Creates the topics that do not exist yet; existing ones are left as they are. */
  ensureTopics(topics: readonly TopicSpec[]): Promise<void>;
  /**
   * Sends the messages in order (per key order is kept). Throws if any message was not accepted:
   * EventBusUnavailableError when the bus cannot be reached, another error when the messages were
   * refused. Some of them may have been written anyway (at-least-once); callers retry.
   */
  publish(messages: readonly OutgoingMessage[]): Promise<void>;
  /**
   * The fenced publisher named `name` (Kafka only: one transactional.id, the client id and `name`,
   * the same on every replica; kafka-fenced.ts). Absent on the in-process bus, which has no replicas.
   */
  fencedPublisher?(name: string): FencedPublisher;
  /** Starts a consumer; it runs until its handle or the bus is stopped. */
  subscribe(definition: ConsumerDefinition, runtime: ConsumerRuntime): Promise<ConsumerHandle>;
  /** 'disabled' for the in-process adapter: there is nothing to be down. */
  health(): Promise<BusHealth>;
  /**
   * Why the brokers refuse this replica (SASL credentials refused, TLS certificate untrusted) since
   * its last refused connect; undefined once a connect succeeds, and always for the in-process adapter.
   * Such a replica is misconfigured, unlike one in a Kafka outage: /health/ready is 503 while it is set.
   */
  credentialsRefused(): string | undefined;
  /** Stops every consumer after its current message, then the producer. */
  stop(): Promise<void>;
  /**
   * Opens a whole-topic read for a runbook replay (physical topic; a group id nobody else uses).
   * Absent on the in-process adapter: it keeps no messages to read again.
   */
  openTopicReader?(topic: string, groupId: string): Promise<TopicReader>;
}

/** A read of a topic from its earliest retained offset, outside every product consumer group. */
export interface TopicReader {
  /**
   * Hands over every record from where the last call stopped (the earliest retained offset, the
   * first time) up to at least each partition's end as of this call, then returns.
   */
  readToEnd(onMessages: (messages: IncomingMessage[]) => void | Promise<void>): Promise<void>;
  close(): Promise<void>;
}

export type BusHealth = 'ok' | 'down' | 'disabled';

/** Sends of a single-runner publisher that Kafka refuses once another replica took it over. */
export interface FencedPublisher {
  readonly transactionalId: string;
  /**
   * Sends the messages in order in one transaction, committed when this returns. Throws
   * EventBusFencedError when a newer producer of the id exists (nothing of this call is visible to
   * read-committed consumers), EventBusUnavailableError when Kafka cannot be reached.
   */
  publish(messages: readonly OutgoingMessage[]): Promise<void>;
  /** The next publish starts with a new producer, which fences every older one of the id. */
  reset(): void;
}

export interface TopicSpec {
  name: string;
  partitions: number;
  /** Broker topic configs, e.g. `max.message.bytes`. */
  configEntries?: { name: string; value: string }[];
}

export interface OutgoingMessage extends WireMessage {
  topic: string;
}

/** A message as the consumer runner receives it from either adapter. */
export interface IncomingMessage {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | string | null;
  value: Buffer | string | null;
  headers: RawHeaders;
  /** The record's Kafka timestamp (ms since the epoch, as text), where the reader hands it over. */
  timestamp?: string;
}

/** A consumer's retry backoff for infrastructure errors: the kernel's one backoff. */
export type BackoffPolicy = Backoff;

/** A Kafka consumer of integration events (docs/architecture.md, "Consumers"). */
export interface ConsumerDefinition<P = unknown> {
  /** Stable name: metric label, inbox `consumer` column, default idempotency key prefix. */
  name: string;
  /** Product topic name (the test prefix is added by the runner). */
  topic: string;
  groupId: string;
  /** Event types this consumer handles; every other type is acknowledged and skipped. */
  eventTypes: readonly string[];
  /** Expected `contract-version`; another one is logged, counted and processed. Default CONTRACT_VERSION_DEFAULT. */
  contractVersion?: number;
  /** Inbox key; default `${name}:${messageId}`. */
  idempotencyKey?(event: EventEnvelope<P>): string;
  /**
   * The event's identifying payload fields (e.g. userId, version) for the runner's own lines about
   * one message — `skipped-duplicate` and the `failed` line of a retried infrastructure error —
   * besides its messageId. The payload is not validated yet: read it leniently, and return no
   * personal data. A throw only leaves the fields out.
   */
  logFields?(event: EventEnvelope<P>): Record<string, unknown>;
  /** Retry delay for infrastructure errors; unlimited retries. Default 1 s → 60 s. */
  backoff?: BackoffPolicy;
  /**
   * Failed attempts in a row on one message after which it is dead-lettered as
   * CONSUMER_RETRIES_EXHAUSTED. Only errors that may be the message's own count (a TypeError, a
   * unique violation it hits every time); an outage of the database or the broker never does.
   * Default EVENTS_DEFAULTS.kafkaConsumerMaxAttempts (10).
   */
  maxAttempts?: number;
  /** Partitions handled in parallel (each still strictly in order). Default 1. */
  partitionsConcurrently?: number;
  /**
   * Consecutive messages of a partition handled in one transaction (one inbox insert, one
   * commit); a failing message never undoes the others. Default 100.
   */
  maxMessagesPerTransaction?: number;
  /**
   * Runs inside the transaction that records the message in the inbox. Throw PoisonMessageError
   * for a message that can never succeed (→ DLQ); any other error is retried with backoff.
   */
  handle(event: EventEnvelope<P>, tx: Db): Promise<void>;
  /**
   * Optional, for throughput: the group's events to handle (fresh, of a handled type, in partition
   * order; at least two) in one call inside the same transaction. It must leave exactly what
   * `handle` called on each in turn would. If it throws anything, the transaction is rolled back
   * and the group is handled again message by message with `handle`, which isolates the failing
   * message (poison → DLQ, anything else → backoff): the batch path may simply throw on anything
   * unusual. Metrics and logs it emits should follow its last statement, so a throw emits none.
   */
  handleBatch?(events: readonly EventEnvelope<P>[], tx: Db): Promise<void>;
}

export const defineConsumer = <P>(definition: ConsumerDefinition<P>): ConsumerDefinition<P> => definition;

/** What a consumer needs from the app. */
export interface ConsumerRuntime {
  db: Db;
  log: Logger;
  registry: Registry;
  /** Test-only prefix (KAFKA_TOPIC_PREFIX) put before the topic and group names. */
  topicPrefix?: string;
}

export interface ConsumerHandle {
  readonly name: string;
  /** Stops after the current message; processed offsets are committed. */
  stop(): Promise<void>;
}
