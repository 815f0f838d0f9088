import type { TopicSpec } from './bus.ts';

/** A topic of the product's catalogue (src/event-topics.ts), as data. */
export interface CatalogueTopic {
  name: string;
  partitions: number;
  /** Consumed by this service → gets a `<name>.dlq` twin with the same partition count. */
  consumed: boolean;
}

export const DLQ_SUFFIX = '.dlq';

export const dlqTopicOf = (topic: string): string => `${topic}${DLQ_SUFFIX}`;

/** The test-only prefix goes in front of topic and group names; product names stay as they are. */
export const withPrefix = (prefix: string | undefined, name: string): string => `${prefix ?? ''}${name}`;

/**
 * Every physical topic the service creates at start: each catalogue topic, plus DLQ twins.
 * `partitions` (EVENTS_DEFAULTS.kafkaTopicPartitions) overrides the catalogue's count when given.
 */
export function topicsToCreate(
  catalogue: readonly CatalogueTopic[],
  opts: { prefix?: string; partitions?: number } = {},
): TopicSpec[] {
  return catalogue.flatMap((t) => {
    const main = { name: withPrefix(opts.prefix, t.name), partitions: opts.partitions ?? t.partitions };
    return t.consumed ? [main, { name: dlqTopicOf(main.name), partitions: main.partitions }] : [main];
  });
}
