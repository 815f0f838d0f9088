import type { Db } from '../db/index.ts';
import type { EventBus, OutgoingMessage } from '../events/bus.ts';
import { EventBusFencedError, EventBusUnavailableError } from '../events/errors.ts';
import type { Fence } from '../jobs/lease-sql.ts';
import type { JobContext, JobDefinition } from '../jobs/types.ts';
import type { Logger } from '../observability/logger.ts';
import type { Registry } from '../observability/metrics.ts';
import { OUTBOX_CHANNEL } from './enqueue.ts';
import { isTopicLevelError, orderingKey, publishErrorText, rowToMessage, splitHeldBack } from './messages.ts';
import { outboxMetrics, type OutboxMetrics } from './metrics.ts';
import { publishTraced } from './publish-tracing.ts';
import { FIRST_ID, markPublished, recordPublishFailure, selectPendingAfter, type PendingRow } from './sql.ts';

export const OUTBOX_PUBLISHER_JOB = 'outbox-publisher';

export interface OutboxPublisherOptions {
  /** Reads and marks run here: app.ts gives the publisher a small pool of its own. */
  db: Db;
  bus: EventBus;
  log: Logger;
  registry: Registry;
  /** Rows read and sent per batch (OUTBOX_BATCH_SIZE). */
  batchSize: number;
  /** A run stops starting new batches after this long (OUTBOX_MAX_RUN_DURATION). */
  maxRunMs: number;
  /** Timer of the job; NOTIFY on commit wakes it sooner (OUTBOX_POLLING_INTERVAL). */
  pollIntervalMs: number;
  /**
   * After a pass leaves nothing pending, a run under the job runner waits this long for the next
   * commit's wake before it ends (app.ts OUTBOX_IDLE_WAIT_MS; 0 or unset = end at once).
   */
  idleWaitMs?: number;
  /** Test-only KAFKA_TOPIC_PREFIX, put before each row's topic when sending. */
  topicPrefix?: string;
}

export interface PublishCounts {
  [name: string]: number;
  /** Rows sent and marked published. */
  published: number;
  /** Failed send attempts (rows left unpublished, attempts + 1). */
  failed: number;
  /** Rows not sent because an earlier row of their key (or their whole topic) failed in this run. */
  heldBack: number;
}

/**
 * What failed in this run and holds rows back until the next one: keys (a row of that key was
 * refused: nothing later of the key may overtake it) and whole topics (the broker refused the
 * topic itself, so each of its rows would fail the same way).
 */
interface Blocked {
  keys: Set<string>;
  topics: Set<string>;
}

/** The run's limits, checked between row-by-row sends. */
interface RunLimits {
  /** The job's signal aborted (graceful stop). */
  aborted(): boolean;
  /** Aborted, or maxRunMs has passed. */
  over(): boolean;
}

interface BatchOutcome {
  sent: PendingRow[];
  failed: number;
  heldBack: number;
  /** The bus is unreachable: the run ends. */
  unavailable: boolean;
  /**
   * Row by row stopped early (abort or deadline): the run ends, or a later batch could overtake
   * the untried rows of a key.
   */
  stopped?: boolean;
}

type PublishContext = Pick<JobContext, 'signal' | 'now' | 'log' | 'woken' | 'waitForWake' | 'fence'>;

interface RunState {
  counts: PublishCounts;
  blocked: Blocked;
  limits: RunLimits;
}

export function validatePublisherOptions(o: OutboxPublisherOptions): void {
  const problems: string[] = [];
  if (!Number.isInteger(o.batchSize) || o.batchSize < 1) problems.push('batchSize must be a positive integer');
  if (!(o.maxRunMs > 0)) problems.push('maxRunMs must be positive');
  if (!(o.pollIntervalMs > 0)) problems.push('pollIntervalMs must be positive');
  if (o.idleWaitMs !== undefined && !(o.idleWaitMs >= 0)) problems.push('idleWaitMs must not be negative');
  if (problems.length > 0) throw new Error(`outbox publisher: ${problems.join('; ')}`);
}

/**
 * Sends committed outbox rows to the bus in id order, in batches: read (no lock, no open
 * transaction), send in bulk, mark the sent ones published in one statement. If the bulk send
 * fails, the batch is re-sent row by row; a row that fails blocks every later row with its key
 * for the rest of the run (with a topic-level Kafka error: every later row of its topic), other
 * keys go on. Delivery is at-least-once: a crash between send and mark re-sends, consumers dedupe
 * by message id.
 *
 * Row by row can be slow (each failing row goes through the client's retries and a producer
 * reconnect), so it stops between rows once the run's signal aborts or its maxRunMs passes. The
 * rows it did not try stay unpublished for the next run and are counted nowhere (not failed: no
 * attempt was made; not held back: nothing blocks them). At least one row is tried after a failed
 * bulk send unless the signal aborted, so a batch whose bulk send alone outlasts maxRunMs still
 * moves on.
 */
export function createOutboxPublisher(opts: OutboxPublisherOptions) {
  validatePublisherOptions(opts);
  const { db, bus } = opts;
  const metrics: OutboxMetrics = outboxMetrics(opts.registry, db);
  // Kafka fences the sends themselves (kafka-fenced.ts): one transactional.id per publisher, the
  // same on every replica (the test prefix keeps test runs apart).
  const fenced = bus.fencedPublisher?.(`${OUTBOX_PUBLISHER_JOB}${opts.topicPrefix ? `.${opts.topicPrefix}` : ''}`);
  const send = fenced ? (messages: readonly OutgoingMessage[]) => fenced.publish(messages) : (messages: readonly OutgoingMessage[]) => bus.publish(messages);
  let lastToken: bigint | undefined;
  /** Runs of this publisher still going here: more than one only when the runner abandoned a hung run. */
  let running = 0;

  /**
   * At a run's start: when another replica held the lock since this one's last run (the lease token
   * did not just grow by one), its producer may hold the newest epoch, so this run's first send
   * starts a new producer, which fences it (and aborts what it left open) before anything is sent.
   * The same when a run abandoned here may still be sending on the current producer.
   */
  function claimProducer(fence: Fence | undefined): void {
    if (!fenced || !fence) return;
    const token = BigInt(fence.token);
    if (lastToken === undefined || token !== lastToken + 1n || running > 1) fenced.reset();
    lastToken = token;
  }

  async function recordFailure(rows: readonly PendingRow[], err: unknown, fence: Fence | undefined): Promise<void> {
    await recordPublishFailure(db, rows.map((r) => r.id), publishErrorText(err), fence);
    for (const r of rows) metrics.failures.inc({ topic: r.topic });
  }

  async function sendRowByRow(rows: readonly PendingRow[], blocked: Blocked, log: Logger, limits: RunLimits, fence: Fence | undefined): Promise<BatchOutcome> {
    const outcome: BatchOutcome = { sent: [], failed: 0, heldBack: 0, unavailable: false };
    let tried = 0;
    for (const [i, row] of rows.entries()) {
      if (blocked.topics.has(row.topic) || blocked.keys.has(orderingKey(row))) {
        outcome.heldBack += 1;
        continue;
      }
      if (tried > 0 ? limits.over() : limits.aborted()) {
        log.info({ untried: rows.length - i, sent: outcome.sent.length }, 'outbox run stopping: rows not tried stay for the next run');
        outcome.stopped = true;
        break;
      }
      tried += 1;
      try {
        await publishTraced(send, [row], [rowToMessage(row, opts.topicPrefix)]);
        outcome.sent.push(row);
      } catch (err) {
        if (err instanceof EventBusFencedError) throw err; // taken over: not the row's failure, and no more sends
        await recordFailure([row], err, fence);
        blocked.keys.add(orderingKey(row));
        outcome.failed += 1;
        const topicLevel = isTopicLevelError(err);
        if (topicLevel) blocked.topics.add(row.topic);
        log.warn(
          { outboxId: row.id, topic: row.topic, eventType: row.eventType, err: publishErrorText(err) },
          topicLevel ? 'outbox topic refused by the broker; its rows wait for the next run' : 'outbox row not published; its key waits',
        );
        if (err instanceof EventBusUnavailableError) {
          outcome.unavailable = true;
          break;
        }
      }
    }
    return outcome;
  }

  async function sendBatch(rows: readonly PendingRow[], blocked: Blocked, log: Logger, limits: RunLimits, fence: Fence | undefined): Promise<BatchOutcome> {
    if (rows.length === 0) return { sent: [], failed: 0, heldBack: 0, unavailable: false };
    try {
      await publishTraced(send, rows, rows.map((r) => rowToMessage(r, opts.topicPrefix)));
      return { sent: [...rows], failed: 0, heldBack: 0, unavailable: false };
    } catch (err) {
      if (err instanceof EventBusFencedError) throw err; // taken over: the run ends, nothing counted on the rows
      if (err instanceof EventBusUnavailableError) {
        // Row by row would fail the same way, once per row: count the attempt on all, stop.
        await recordFailure(rows, err, fence);
        log.warn({ rows: rows.length, err: publishErrorText(err) }, 'event bus unreachable, outbox publishing paused until the next run');
        return { sent: [], failed: rows.length, heldBack: 0, unavailable: true };
      }
      log.warn({ rows: rows.length, err: publishErrorText(err) }, 'bulk send failed, retrying the batch row by row');
      return sendRowByRow(rows, blocked, log, limits, fence);
    }
  }

  async function markSent(rows: readonly PendingRow[], now: Date, fence: Fence | undefined): Promise<void> {
    if (rows.length === 0) return;
    await markPublished(db, rows.map((r) => r.id), now, fence);
    for (const r of rows) {
      metrics.published.inc({ topic: r.topic });
      metrics.lag.observe(Math.max(0, (now.getTime() - r.createdAtMs) / 1000));
    }
  }

  /**
   * One pass over the pending rows from the start: batches until one comes back short (true), or
   * until the run must end (false: maxRunMs, abort, bus unreachable). Sends stay strictly one after
   * another (per-key order); the read of the next batch (the cursor moves on, not the mark) and the
   * mark of the previous one overlap with the send in flight. A batch's mark starts only once the
   * previous mark is written, so at most two batches are ever sent and unmarked: a crash repeats at
   * most those two (at-least-once). Every mark is written before it returns, so a next pass never
   * re-reads a row it sent.
   */
  async function drain(ctx: PublishContext, run: RunState): Promise<boolean> {
    const { counts, blocked, limits } = run;
    let next: Promise<PendingRow[]> | undefined = selectPendingAfter(db, FIRST_ID, opts.batchSize);
    let marking: Promise<void> = Promise.resolve();
    let markError: unknown;
    let drained = false;
    try {
      while (next) {
        const rows = await next;
        next = undefined;
        if (rows.length < opts.batchSize) drained = true;
        if (rows.length === 0) break;
        if (rows.length === opts.batchSize && !limits.over()) {
          next = selectPendingAfter(db, rows[rows.length - 1]!.id, opts.batchSize);
        }
        const { sendable, heldBack } = splitHeldBack(rows, blocked.keys, blocked.topics);
        const outcome = await sendBatch(sendable, blocked, ctx.log, limits, ctx.fence);
        const sentAt = ctx.now();
        await marking; // the previous batch's mark, written while this one was sent
        marking = markSent(outcome.sent, sentAt, ctx.fence).catch((err: unknown) => {
          markError ??= err;
        });
        counts.published += outcome.sent.length;
        counts.failed += outcome.failed;
        counts.heldBack += heldBack.length + outcome.heldBack;
        if (outcome.unavailable || outcome.stopped || ctx.signal.aborted || markError !== undefined) {
          drained = false;
          break;
        }
      }
    } finally {
      await next?.catch(() => undefined);
      await marking;
    }
    if (markError !== undefined) throw markError;
    return drained && !limits.over();
  }

  /**
   * One run: passes over the pending rows until nothing is left, then — under the job runner — it
   * stays up to idleWaitMs for the next commit's wake and goes again, so a steady stream of events
   * is served by one run (one lock, one job_state write) per maxRunMs instead of one per commit.
   * A key that failed stays blocked for the whole run.
   */
  async function publishPending(ctx: PublishContext): Promise<PublishCounts> {
    const deadline = performance.now() + opts.maxRunMs;
    running += 1;
    claimProducer(ctx.fence);
    try {
      return await passes(ctx, deadline);
    } finally {
      running -= 1;
    }
  }

  async function passes(ctx: PublishContext, deadline: number): Promise<PublishCounts> {
    const run: RunState = {
      counts: { published: 0, failed: 0, heldBack: 0 },
      blocked: { keys: new Set(), topics: new Set() },
      limits: {
        aborted: () => ctx.signal.aborted,
        over: () => ctx.signal.aborted || performance.now() >= deadline,
      },
    };
    while (await drain(ctx, run)) {
      if (ctx.woken?.()) continue;
      const left = deadline - performance.now();
      if (!(opts.idleWaitMs && ctx.waitForWake && (await ctx.waitForWake(Math.min(opts.idleWaitMs, left))))) break;
    }
    const { counts } = run;
    if (counts.published > 0 || counts.failed > 0) ctx.log.debug(counts, 'outbox publisher run');
    return counts;
  }

  return { publishPending, metrics };
}

/** The publisher as a job: one replica at a time, woken by NOTIFY on enqueue commit. */
export function outboxPublisherJob(opts: OutboxPublisherOptions): JobDefinition {
  const publisher = createOutboxPublisher(opts);
  return {
    name: OUTBOX_PUBLISHER_JOB,
    every: opts.pollIntervalMs,
    singleRunner: true,
    maxRunMs: opts.maxRunMs,
    wakeChannel: OUTBOX_CHANNEL,
    run: (ctx) => publisher.publishPending(ctx),
  };
}
