import type pg from 'pg';
import type { Config } from '../config.ts';
import { backoffDelayMs } from '../platform/backoff/index.ts';
import { createDb } from '../platform/db/index.ts';
import type { ConsumerDefinition, ConsumerHandle, EventBus } from '../platform/events/bus.ts';
import type { JobRunner } from '../platform/jobs/index.ts';
import type { Logger } from '../platform/observability/logger.ts';
import type { Registry } from '../platform/observability/metrics.ts';
import { EVENTS_DEFAULTS } from '../platform/events/index.ts';


export interface BackgroundDeps {
  config: Pick<Config, 'JOBS_ENABLED' | 'KAFKA_TOPIC_PREFIX'>;
  bus: EventBus;
  runner: JobRunner;
  consumers: readonly ConsumerDefinition<unknown>[];
  /** The consumers' own small pool (app.ts). */
  consumerPool: pg.Pool;
  log: Logger;
  registry: Registry;
}

/**
 * The replica's background: the event bus (topics, producer, then consumers) and the job runner.
 * Kafka being down at start must not stop the replica: the bus is retried until it is back. Jobs need
 * only the producer, so the consumers join their groups in the background: after a crash a join
 * waits until the dead member's session expires (up to the session timeout), and the outbox
 * publisher and realtime dispatch must not wait with it.
 */
export function createBackground(deps: BackgroundDeps): { start(): Promise<void>; stop(): Promise<void> } {
  const { bus, runner, consumers, log } = deps;
  const handles: ConsumerHandle[] = [];
  let state: 'idle' | 'started' | 'closing' = 'idle';
  let busRetry: NodeJS.Timeout | undefined;
  // A function, not a narrowed comparison: stop() changes `state` while a join is awaited.
  const closing = () => state === 'closing';

  async function connectBus(attempt = 1): Promise<void> {
    if (closing()) return;
    try {
      await bus.start();
    } catch (err) {
      retryBus(attempt, err);
      return;
    }
    void subscribeConsumers(attempt);
  }

  async function subscribeConsumers(attempt: number): Promise<void> {
    try {
      // A retry after a partial start subscribes only the consumers still missing.
      while (handles.length < consumers.length && !closing()) {
        const consumer = consumers[handles.length]!;
        const runtime = { db: createDb(deps.consumerPool), log, registry: deps.registry, topicPrefix: deps.config.KAFKA_TOPIC_PREFIX };
        const handle = await bus.subscribe(consumer, runtime);
        handles.push(handle);
        // Closed while this one was joining: stop() has stopped the others already.
        if (closing()) await handle.stop();
      }
    } catch (err) {
      retryBus(attempt, err);
    }
  }

  function retryBus(attempt: number, err: unknown): void {
    if (closing()) return;
    const delayMs = backoffDelayMs(EVENTS_DEFAULTS.busStartBackoff, attempt);
    log.error({ err, attempt, retryInMs: delayMs }, 'event bus start failed; outbox rows wait, consumers start when it is back');
    busRetry = setTimeout(() => void connectBus(attempt + 1), delayMs);
  }

  return {
    async start() {
      if (!deps.config.JOBS_ENABLED || state !== 'idle') return;
      state = 'started';
      await connectBus();
      await runner.start();
    },
    /** Jobs stop between rows, consumers after their current message, and the producer last. */
    async stop() {
      state = 'closing';
      clearTimeout(busRetry);
      await runner.stop();
      await Promise.all(handles.map((h) => h.stop()));
      await bus.stop();
    },
  };
}
