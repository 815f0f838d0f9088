import { backoffProblems, type Backoff } from '../backoff/index.ts';
import type { BackoffPolicy, ConsumerDefinition } from './bus.ts';
import { CONTRACT_VERSION_DEFAULT, type EventEnvelope } from './envelope.ts';
import { EVENTS_DEFAULTS } from './defaults.ts';
import { withPrefix } from './topics.ts';

/** Infrastructure errors are retried without end (EVENTS_DEFAULTS.consumerRetryBackoff: 1 s doubling to 60 s, with jitter). */
export const DEFAULT_BACKOFF: Backoff = EVENTS_DEFAULTS.consumerRetryBackoff;

/** A consumer definition with its defaults applied and its physical names worked out. */
export interface ResolvedConsumer {
  definition: ConsumerDefinition;
  name: string;
  topic: string;
  physicalTopic: string;
  groupId: string;
  eventTypes: ReadonlySet<string>;
  contractVersion: number;
  backoff: BackoffPolicy;
  maxAttempts: number;
  partitionsConcurrently: number;
  maxMessagesPerTransaction: number;
  idempotencyKey(event: EventEnvelope): string;
  /** The definition's logFields, never throwing ({} without one). */
  logFields(event: EventEnvelope): Record<string, unknown>;
}

/** Kernel-wide consumer defaults (EVENTS_DEFAULTS.kafkaConsumerMaxAttempts). */
export interface ConsumerDefaults {
  maxAttempts?: number;
}

export function resolveConsumer(definition: ConsumerDefinition, topicPrefix = '', defaults: ConsumerDefaults = {}): ResolvedConsumer {
  const problems: string[] = [];
  if (!definition.name || definition.name.length > 100) problems.push('name must be 1..100 characters');
  if (!definition.topic) problems.push('topic is required');
  if (!definition.groupId) problems.push('groupId is required');
  if (definition.eventTypes.length === 0) problems.push('eventTypes must name at least one event type');
  const backoff = definition.backoff ?? DEFAULT_BACKOFF;
  problems.push(...backoffProblems(backoff));
  const positive = (v: number | undefined, def: number, name: string) => {
    const n = v ?? def;
    if (!Number.isInteger(n) || n < 1) problems.push(`${name} must be a positive integer`);
    return n;
  };
  const partitionsConcurrently = positive(definition.partitionsConcurrently, EVENTS_DEFAULTS.consumerPartitionsConcurrently, 'partitionsConcurrently');
  const maxMessagesPerTransaction = positive(definition.maxMessagesPerTransaction, EVENTS_DEFAULTS.consumerMaxMessagesPerTransaction, 'maxMessagesPerTransaction');
  const maxAttempts = positive(definition.maxAttempts ?? defaults.maxAttempts, EVENTS_DEFAULTS.kafkaConsumerMaxAttempts, 'maxAttempts');
  if (problems.length > 0) throw new Error(`consumer ${definition.name}: ${problems.join('; ')}`);
  return {
    definition,
    name: definition.name,
    topic: definition.topic,
    physicalTopic: withPrefix(topicPrefix, definition.topic),
    groupId: withPrefix(topicPrefix, definition.groupId),
    eventTypes: new Set(definition.eventTypes),
    contractVersion: definition.contractVersion ?? CONTRACT_VERSION_DEFAULT,
    backoff,
    maxAttempts,
    partitionsConcurrently,
    maxMessagesPerTransaction,
    idempotencyKey: (e) => definition.idempotencyKey?.(e) ?? `${definition.name}:${e.messageId}`,
    logFields(e) {
      try {
        return definition.logFields?.(e) ?? {};
      } catch {
        return {};
      }
    },
  };
}
