import type { EventBus, FencedPublisher, OutgoingMessage } from '../../../src/platform/events/bus.ts';
import type { NewEvent } from '../../../src/platform/outbox/enqueue.ts';
import { createOutboxPublisher, type OutboxPublisherOptions } from '../../../src/platform/outbox/publisher.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { testLog } from '../events/support.ts';

/**
 * A publisher factory for one test file: its database, bus and topic prefix fixed, each call
 * with a fresh registry unless `over` brings one; batch 100, 10 s runs unless overridden.
 */
export function publisherFactory(base: { db: OutboxPublisherOptions['db']; bus: EventBus; topicPrefix: string }) {
  return (over: Partial<OutboxPublisherOptions> = {}) => {
    const registry = over.registry ?? new Registry();
    const options: OutboxPublisherOptions = {
      ...base,
      log: testLog,
      registry,
      batchSize: 100,
      maxRunMs: 10_000,
      pollIntervalMs: 1000,
      ...over,
    };
    return { ...createOutboxPublisher(options), registry };
  };
}

/** An OrderChanged event of `key`; seq goes into the payload and the correlation id. */
export const orderEvent = (topic: string, key: string, seq: number, extra: Record<string, unknown> = {}): NewEvent => ({
  topic,
  eventType: 'OrderChangedKafkaEvent',
  aggregateType: 'Order',
  aggregateId: key,
  occurredAt: new Date('2026-01-02T03:04:05Z'),
  correlationId: `corr-${seq}`,
  payload: { OrderId: key, Seq: seq, ...extra },
});

/**
 * The bus with every send of the publisher — plain, or through its fenced (transactional)
 * publisher — going through `around`, which makes the real send by calling `send()`: a test's hook
 * before or after a send that really reaches Kafka.
 */
export function aroundSends(bus: EventBus, around: (messages: readonly OutgoingMessage[], send: () => Promise<void>) => Promise<void>): EventBus {
  const fenced = bus.fencedPublisher?.bind(bus);
  return {
    ...bus,
    publish: (messages) => around(messages, () => bus.publish(messages)),
    ...(fenced
      ? {
          fencedPublisher: (name: string): FencedPublisher => {
            const f = fenced(name);
            return { transactionalId: f.transactionalId, reset: () => f.reset(), publish: (messages) => around(messages, () => f.publish(messages)) };
          },
        }
      : {}),
  };
}
