import type { Db } from '../db/index.ts';
import type { EventBus, OutgoingMessage } from '../events/bus.ts';
import { batchPhase, defineBatchWorker, type BatchRunContext, type BatchWorker, type Outcome } from '../jobs/index.ts';
import type { Fence } from '../jobs/lease-sql.ts';
import type { Logger } from '../observability/logger.ts';
import { newId } from '../time.ts';
import type { Registry } from '../observability/metrics.ts';
import { outboxOptionsProblems } from './defaults.ts';
import { OUTBOX_CHANNEL } from './enqueue.ts';
import { outboxMetrics, type OutboxMetrics } from './metrics.ts';
import { createOutboxSender, type PublishRun } from './publish-send.ts';
import { assertLeaseHolds, FIRST_ID, markPublished, selectPendingAfter, type PendingRow } from './sql.ts';

export const OUTBOX_PUBLISHER_JOB = 'outbox-publisher';

export interface OutboxPublisherOptions {
  /** Reads and marks run here: app.ts gives the publisher a small pool of its own. */
  db: Db;
  bus: EventBus;
  log: Logger;
  registry: Registry;
  /** Rows read and sent per batch (OUTBOX_DEFAULTS.outboxBatchSize). */
  batchSize: number;
  /** A run stops starting new batches after this long (OUTBOX_DEFAULTS.outboxMaxRunMs). */
  maxRunMs: number;
  /** Timer of the job; NOTIFY on commit wakes it sooner (OUTBOX_POLLING_INTERVAL). */
  pollIntervalMs: number;
  /**
   * After a pass leaves nothing pending, a run under the job runner waits this long for the next
   * commit's wake before it ends (OUTBOX_DEFAULTS.outboxIdleWaitMs; 0 or unset = end at once).
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

type PublishContext = Omit<BatchRunContext, 'jobRunId'> & { jobRunId?: string };

/**
 * Sends committed outbox rows to the bus in id order, as the kernel's batch worker (one phase):
 *
 *   1. claim   — read the next batch after the cursor (no lock, no open transaction; the publisher
 *                is a single runner); a full batch starts the read of the one after at once;
 *   2. process — send the batch in bulk; if that fails, row by row: a row that fails blocks every
 *                later row of its key for the rest of the run (a topic-level Kafka error: every
 *                later row of its topic), other keys go on;
 *   3. record  — mark the sent rows published in one statement, while the next batch is read and
 *                sent (overlapRecord). A mark starts only once the previous one is written, so at
 *                most two batches are ever sent and unmarked: a crash repeats at most those two
 *                (at-least-once; consumers dedupe by message id).
 *
 * A drained pass (short batch) waits for the next commit's wake (idleWaitMs) and starts over from
 * the first pending row, leaving out the rows sent whose mark is still being written (it does not
 * wait for it). Row by row can be slow (each failing row goes through the client's
 * retries and a producer reconnect), so it stops between rows once the run is stopped or its
 * maxRunMs passes; the rows it did not try stay for the next run, counted nowhere. At least one row
 * is tried after a failed bulk send unless the run was stopped, so a batch whose bulk send alone
 * outlasts maxRunMs still moves on. An unreachable bus ends the run.
 */
export function createOutboxPublisher(opts: OutboxPublisherOptions) {
  // The one check at construction (River's Config.validate): a bad value fails here, not mid-run.
  const problems = outboxOptionsProblems(opts);
  if (problems.length > 0) throw new Error(`invalid outbox publisher options: ${problems.join('; ')}`);
  const { db, bus } = opts;
  const metrics: OutboxMetrics = outboxMetrics(opts.registry, db);
  // Kafka fences the sends themselves (kafka-fenced.ts): one transactional.id per publisher, the
  // same on every replica (the test prefix keeps test runs apart).
  const fenced = bus.fencedPublisher?.(`${OUTBOX_PUBLISHER_JOB}${opts.topicPrefix ? `.${opts.topicPrefix}` : ''}`);
  let lastToken: bigint | undefined;
  /** The fence of the run that sends now (the newest run here). */
  let runFence: Fence | undefined;
  /** The next send starts a new producer: the first one, after reset(), and after any failed send. */
  let producerNew = true;
  /**
   * A new producer's InitProducerId fences every other producer of the transactional.id, the
   * current holder's too. So it starts only while this run's lease holds: a holder that froze,
   * was taken over and wakes into a failed send would otherwise start one, fence the new holder and
   * land its old rows after the new holder's newer ones (a late repeat the fault suite caught).
   */
  async function sendFenced(publisher: NonNullable<typeof fenced>, messages: readonly OutgoingMessage[]): Promise<void> {
    if (producerNew && runFence) await assertLeaseHolds(db, runFence, 'outbox producer start');
    try {
      await publisher.publish(messages);
      producerNew = false;
    } catch (err) {
      producerNew = true;
      throw err;
    }
  }
  const send = fenced ? (messages: readonly OutgoingMessage[]) => sendFenced(fenced, messages) : (messages: readonly OutgoingMessage[]) => bus.publish(messages);
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
    runFence = fence;
    const token = BigInt(fence.token);
    if (lastToken === undefined || token !== lastToken + 1n || running > 1) {
      fenced.reset();
      producerNew = true;
    }
    lastToken = token;
  }

  const { sendBatch } = createOutboxSender({ db, metrics, send, topicPrefix: opts.topicPrefix });

  async function markSent(outcomes: readonly Outcome<PendingRow, Date>[], fence: Fence | undefined): Promise<void> {
    const done = outcomes.flatMap((o) => (o.status === 'done' ? [o] : []));
    if (done.length === 0) return;
    const sentAt = done[0]!.result;
    await markPublished(db, done.map((o) => o.row.id), sentAt, fence);
    for (const { row, result } of done) {
      metrics.published.inc({ topic: row.topic });
      metrics.lag.observe(Math.max(0, (result.getTime() - row.createdAtMs) / 1000));
    }
  }

  /**
   * Reads `limit` rows after `after`, without the rows sent whose mark was not written when the
   * read began (read that many more, then left out): a new pass need not wait for the last mark to
   * be written, and never sends a row twice. A row whose mark was written before is no longer
   * pending for a read that begins after it. A rejection is taken where the read is awaited, never
   * left unhandled.
   */
  function readAfter(state: PublishRun, after: string, limit: number): Promise<PendingRow[]> {
    // The sets themselves never change: a copy of the list is the snapshot.
    const skip = [...state.unmarked];
    const extra = skip.reduce((n, ids) => n + ids.size, 0);
    const raw = selectPendingAfter(db, after, limit + extra);
    const read = extra > 0 ? raw.then((rows) => rows.filter((r) => !skip.some((ids) => ids.has(r.id))).slice(0, limit)) : raw;
    read.catch(() => undefined);
    return read;
  }

  const publishPhase = (state: PublishRun) =>
    batchPhase<PendingRow, Date>({
      name: 'publish',
      overlapRecord: true,
      async claim(limit, run) {
        let rows: PendingRow[];
        if (state.next) {
          rows = await state.next;
          state.next = undefined;
        } else {
          rows = await readAfter(state, state.cursor, limit);
        }
        if (rows.length === limit && run.timeLeftMs() > 0) {
          state.cursor = rows[rows.length - 1]!.id;
          state.next = readAfter(state, state.cursor, limit);
        } else {
          state.cursor = FIRST_ID;
        }
        return rows;
      },
      processBatch: (rows, run) => sendBatch(rows, state, run),
      record(outcomes, run) {
        const sent = new Set(outcomes.flatMap((o) => (o.status === 'done' ? [o.row.id] : [])));
        if (sent.size > 0) state.unmarked.add(sent);
        const marking = markSent(outcomes, run.fence);
        // Written: later reads no longer see them pending. A failed mark keeps them out of this run's reads.
        marking.then(() => state.unmarked.delete(sent), () => undefined);
        run.count('published', sent.size);
        return marking;
      },
    });

  const worker = defineBatchWorker<PublishRun>({
    name: OUTBOX_PUBLISHER_JOB,
    every: opts.pollIntervalMs,
    singleRunner: true,
    wakeChannel: OUTBOX_CHANNEL,
    settings: { batchSize: opts.batchSize, maxRunMs: opts.maxRunMs, ...(opts.idleWaitMs === undefined ? {} : { idleWaitMs: opts.idleWaitMs }) },
    counts: ['published', 'heldBack'],
    start(run) {
      running += 1;
      claimProducer(run.fence);
      return { blockedKeys: new Set(), blockedTopics: new Set(), cursor: FIRST_ID, next: undefined, unmarked: new Set() };
    },
    phases: (_run, state) => [publishPhase(state)],
    async finish(_run, state) {
      running -= 1;
      await state.next?.catch(() => undefined);
    },
  });

  /** One run outside the runner (tests, benchmarks): the publisher's three counts. */
  async function publishPending(ctx: PublishContext): Promise<PublishCounts> {
    const { published = 0, failed, heldBack = 0 } = await worker.runOnce({ jobRunId: newId(), ...ctx });
    return { published, failed, heldBack };
  }

  return { worker, publishPending, metrics };
}

/** The publisher as a job: one replica at a time, woken by NOTIFY on enqueue commit. */
export function outboxPublisherJob(opts: OutboxPublisherOptions): BatchWorker {
  return createOutboxPublisher(opts).worker;
}
