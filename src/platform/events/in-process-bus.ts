import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../observability/logger.ts';
import type { BusHealth, ConsumerHandle, EventBus, IncomingMessage, OutgoingMessage } from './bus.ts';
import { consumerMetrics } from './consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer, type MessageProcessor } from './consumer-runner.ts';
import { EventBusUnavailableError } from './errors.ts';
import { EVENTS_DEFAULTS } from './defaults.ts';

/**
 * The bus used when KAFKA_BROKERS is unset: published messages go straight to the consumers
 * subscribed in this process, through the same consumer runner as Kafka (inbox dedupe, handler
 * transaction, poison → `<topic>.dlq`, backoff retries in partition order). Nothing leaves the
 * process and nothing survives a restart; a topic without a subscriber drops its messages.
 * Consumers must therefore be subscribed before the outbox publisher starts.
 */
export interface InProcessBusOptions {
  log: Logger;
  /** A consumer's maxAttempts unless it sets its own (EVENTS_DEFAULTS.kafkaConsumerMaxAttempts). */
  consumerMaxAttempts?: number;
  /** Partitions per topic: keys hash onto them, so one key's failure holds back only its partition (inProcessBusDefaults). */
  partitions?: number;
}

interface PartitionWorker {
  queue: IncomingMessage[];
  running?: Promise<void>;
}

interface Subscription {
  processor: MessageProcessor;
  workers: PartitionWorker[];
  stopping: boolean;
  abort: AbortController;
}

/** FNV-1a: stable, cheap; only needs to spread keys, not to match Kafka's partitioner. */
export function partitionForKey(key: Buffer | string, partitions: number): number {
  const bytes = typeof key === 'string' ? Buffer.from(key) : key;
  let hash = 0x811c9dc5;
  for (const b of bytes) hash = Math.imul(hash ^ b, 0x01000193) >>> 0;
  return hash % partitions;
}

export const inProcessBusDefaults = { partitions: EVENTS_DEFAULTS.kafkaTopicPartitions } as const;

export function createInProcessBus(opts: InProcessBusOptions): EventBus {
  const log = opts.log.child({ component: 'in-process-bus' });
  const partitions = opts.partitions ?? inProcessBusDefaults.partitions;
  const nextOffset = new Map<string, bigint>();
  const subscriptions = new Map<string, Set<Subscription>>();
  let roundRobin = 0;
  let closing = false;
  let stopped = false;

  async function drain(sub: Subscription, partition: number): Promise<void> {
    const worker = sub.workers[partition]!;
    while (!sub.stopping && worker.queue.length > 0) {
      const chunk = worker.queue.slice(0, sub.processor.consumer.maxMessagesPerTransaction);
      const { done, error, attempt } = await sub.processor.processBatch(chunk);
      if (done > 0) {
        worker.queue.splice(0, done);
        const next = Number(chunk[done - 1]!.offset) + 1;
        sub.processor.reportLag(partition, next + worker.queue.length, next);
      }
      if (error !== undefined) {
        const delay = sub.processor.retryDelay(worker.queue[0]!, error, attempt ?? 1);
        await sleep(delay, undefined, { signal: sub.abort.signal }).catch(() => undefined);
      }
    }
  }

  function kick(sub: Subscription, partition: number): void {
    const worker = sub.workers[partition]!;
    if (worker.running || sub.stopping) return;
    worker.running = drain(sub, partition).finally(() => {
      worker.running = undefined;
      // A message may have arrived between the loop's last check and this callback.
      if (worker.queue.length > 0) kick(sub, partition);
    });
  }

  async function stopSubscription(topic: string, sub: Subscription): Promise<void> {
    sub.stopping = true;
    sub.abort.abort();
    await Promise.all(sub.workers.map((w) => w.running));
    subscriptions.get(topic)?.delete(sub);
  }

  const bus: EventBus = {
    kind: 'in-process',

    async start() {
      log.warn(
        'KAFKA_BROKERS is unset: using the IN-PROCESS event bus. Integration events reach only consumers in this ' +
          'process, other services receive nothing, and undelivered events are lost on restart. Not for production.',
      );
    },

    async ensureTopics() {
      // Topics exist implicitly.
    },

    async publish(messages: readonly OutgoingMessage[]) {
      if (stopped) throw new EventBusUnavailableError('event bus stopped');
      for (const m of messages) {
        const partition = m.key === null ? roundRobin++ % partitions : partitionForKey(m.key, partitions);
        const slot = `${m.topic}\u0000${partition}`;
        const offset = nextOffset.get(slot) ?? 0n;
        nextOffset.set(slot, offset + 1n);
        const msg: IncomingMessage = { topic: m.topic, partition, offset: String(offset), key: m.key, value: m.value, headers: { ...m.headers } };
        for (const sub of subscriptions.get(m.topic) ?? []) {
          sub.workers[partition]!.queue.push(msg);
          kick(sub, partition);
        }
      }
    },

    async subscribe(definition, runtime): Promise<ConsumerHandle> {
      if (closing) throw new Error('event bus stopped');
      const consumer = resolveConsumer(definition, runtime.topicPrefix, { maxAttempts: opts.consumerMaxAttempts });
      const processor = createMessageProcessor(consumer, {
        db: runtime.db,
        log: runtime.log,
        metrics: consumerMetrics(runtime.registry),
        publish: (m) => bus.publish(m),
      });
      const sub: Subscription = {
        processor,
        workers: Array.from({ length: partitions }, () => ({ queue: [] })),
        stopping: false,
        abort: new AbortController(),
      };
      let subs = subscriptions.get(consumer.physicalTopic);
      if (!subs) subscriptions.set(consumer.physicalTopic, (subs = new Set()));
      subs.add(sub);
      log.info({ consumer: consumer.name, topic: consumer.topic }, 'in-process consumer started');
      return { name: consumer.name, stop: () => stopSubscription(consumer.physicalTopic, sub) };
    },

    credentialsRefused: () => undefined,

    async health(): Promise<BusHealth> {
      return 'disabled';
    },

    async stop() {
      if (closing) return;
      closing = true;
      const all = [...subscriptions].flatMap(([topic, subs]) => [...subs].map((s) => stopSubscription(topic, s)));
      await Promise.all(all);
      stopped = true;
    },
  };
  return bus;
}
