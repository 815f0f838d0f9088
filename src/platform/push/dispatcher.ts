import diagnostics_channel from 'node:diagnostics_channel';
import type { Backoff } from '../backoff/index.ts';
import { backoffScheduleMs } from '../backoff/index.ts';
import type { Db } from '../db/index.ts';
import type { BatchRun, Outcome } from '../jobs/index.ts';
import type { Hub } from '../realtime/index.ts';
import { withTimeout } from '../time.ts';
import { claimDue, recordOutcomes, type ClaimedRow, type OutcomeUpdate } from './claim-sql.ts';
import { cursorOf } from './cursor.ts';
import type { RealtimeMetrics } from './metrics.ts';
import { chatGroupOf, type PushKinds } from './port.ts';
import { codedLastError, lastErrorText, outcomeOf, PUSH_FAILURE, type PushResult, type RowOutcome } from './rules.ts';


/**
 * Each claimed batch's rows' CreatedAt (the owner's write, epoch ms) and when the claim returned, for a
 * benchmark's breakdown of a push's time (diagnostics_channel; nothing is built without a subscriber).
 */
export const CLAIMED_TIMING_CHANNEL = 'pin:push:claimed';
const claimedTimings = diagnostics_channel.channel(CLAIMED_TIMING_CHANNEL);

export interface ClaimedTiming {
  claimedAtMs: number;
  createdAtMs: number[];
}

/**
 * The RealtimeDispatchJob's steps (seed 000 steps 3–5) as the kernel's batch worker calls them:
 * claim a batch in one statement, push each row outside any transaction, record the batch's
 * outcomes in one statement. dispatch.job.ts puts them together. What a row becomes is its kind
 * owner's (PushKinds: load once per batch, build per row); this file knows no kind.
 */

/** Internal alert (log + metric), never a Kafka event. */
export interface RealtimeDispatchQuarantinedEvent {
  OutboxEntryId: string;
  Kind: string;
  ChatId: string | null;
  Attempts: number;
}

export interface DispatchStepsDeps {
  db: Db;
  /** `health`, when there, tells a batch's failed pushes caused by the backplane being down from others. */
  hub: Pick<Hub, 'send' | 'addUserToGroup' | 'removeUserFromGroup' | 'disconnectUser'> & Partial<Pick<Hub, 'health'>>;
  metrics: RealtimeMetrics;
  /** The registered kinds: what the claim reads beside its rows, and each kind's load and build steps. */
  kinds: PushKinds;
  maxAttempts: number;
  backoff: Backoff;
  /** A push not finished by then is a transient failure of its row; what it waited on is left to settle. */
  pushTimeoutMs: number;
  onQuarantined?: (event: RealtimeDispatchQuarantinedEvent) => void;
}

/** A claimed row with what its push reads: the batch's referenced entities, loaded once per batch. */
export interface DispatchRow extends ClaimedRow {
  /** The claim quarantined it: it had already used MaxAttempts. Not pushed, not recorded again. */
  exhausted: boolean;
  /** What the owners' load steps read for the batch (PushKinds.load). */
  refs: unknown;
  /** Its event-stream position as the frame's Cursor (absent for kinds that push no frame). */
  cursor?: string;
}

/** What the push of a row came to; null for a row the claim quarantined (nothing to push). */
export type DispatchResult = PushResult | null;

/** The job's own counts, beside the kernel's (every run reports them, zero included). */
export const DISPATCH_COUNTS = ['dispatched', 'retried', 'quarantined', 'overtaken'] as const;

/** What the push timeout names, so its error is told from the hub's own. */
const PUSH_WHAT = 'realtime push';

export function createDispatchSteps(deps: DispatchStepsDeps) {
  const { metrics, maxAttempts, kinds } = deps;
  const delaysMs = backoffScheduleMs(deps.backoff, maxAttempts);

  function alert(row: ClaimedRow, reason: 'attempts_exhausted' | 'ref_not_found', run: BatchRun): void {
    run.count('quarantined');
    metrics.quarantined.inc({ kind: row.kind, reason });
    const fields = { entryId: row.id, kind: row.kind, chatId: row.chatId, attempts: row.attempts, reason, event: 'RealtimeDispatchQuarantinedEvent' };
    run.log.error(fields, 'realtime outbox row quarantined');
    deps.onQuarantined?.({ OutboxEntryId: row.id, Kind: row.kind, ChatId: row.chatId, Attempts: row.attempts });
  }

  /**
   * Steps 3–4, one statement: due Pending rows in id order, SKIP LOCKED, Attempts + 1 and
   * NextAttemptAt by the backoff; rows already out of attempts come back quarantined (`exhausted`)
   * and are alerted here. The others come in push order with the entities they point at.
   */
  async function claim(limit: number, run: BatchRun, exclude: readonly string[]): Promise<DispatchRow[]> {
    const claimed = await claimDue(deps.db, { now: run.now(), limit, maxAttempts, delaysMs, jitter: deps.backoff.jitter, exclude }, kinds.claimReads());
    if (claimed.length === 0) return [];
    if (claimedTimings.hasSubscribers) {
      const timing: ClaimedTiming = { claimedAtMs: Date.now(), createdAtMs: claimed.map((r) => r.createdAt.getTime()) };
      claimedTimings.publish(timing);
    }
    run.log.info({ rows: claimed.length }, 'realtime batch claimed');
    // In push order: the claim gave each row its event-stream position in that order, so a frame's
    // Cursor is readable from GET /api/events before the client gets the frame.
    const live = claimed.filter((r) => !r.exhausted);
    const refs = await kinds.load(deps.db, live);
    const exhausted = claimed.filter((r) => r.exhausted);
    for (const row of exhausted) alert(row, 'attempts_exhausted', run);
    // Quarantined rows first: a stop between rows then only ever releases rows that were to be pushed.
    return [...exhausted, ...live].map((r) => Object.assign(r, { refs }, r.position == null ? {} : { cursor: cursorOf(r.position) }));
  }

  /** Step 5, one row outside any transaction: build its payload and push it (membership changes first), within the push timeout. */
  async function push(row: DispatchRow): Promise<DispatchResult> {
    if (row.exhausted) return null;
    let built: ReturnType<PushKinds['build']>;
    try {
      built = kinds.build(row, row.refs);
    } catch (err) {
      return { kind: 'transient', code: PUSH_FAILURE.frameBuild, error: lastErrorText(err) };
    }
    if (!built.ok) return { kind: 'missing', code: built.code };
    try {
      const { membership, sends, disconnect } = built.delivery;
      const cursor = row.cursor;
      // Sends to the row's chat group carry its membership version (record-level access at delivery).
      const chat = row.targetKind === 'ChatGroup' && row.chatId ? chatGroupOf(row.chatId) : undefined;
      const versioned = row.membershipVersion == null ? undefined : { membershipVersion: row.membershipVersion };
      await withTimeout(
        (async () => {
          if (disconnect) await deps.hub.disconnectUser(disconnect, kinds.disconnectReason(row.kind));
          for (const m of membership ?? []) {
            if (m.op === 'join') await deps.hub.addUserToGroup(m.userId, m.group);
            else await deps.hub.removeUserFromGroup(m.userId, m.group);
          }
          for (const s of sends) {
            const streamed = cursor === undefined ? s.payload : { ...s.payload, Cursor: cursor };
            const payload = s.joinFor ? { ...streamed, Join: await kinds.mintJoin(row.kind, s.joinFor) } : streamed;
            await deps.hub.send(s.group, s.event, payload, s.group === chat ? versioned : undefined);
          }
        })(),
        deps.pushTimeoutMs,
        PUSH_WHAT,
      );
      return { kind: 'delivered' };
    } catch (err) {
      const timedOut = err instanceof Error && err.message.startsWith(`${PUSH_WHAT} timed out`);
      return { kind: 'transient', code: timedOut ? PUSH_FAILURE.timeout : PUSH_FAILURE.failed, error: lastErrorText(err) };
    }
  }

  /**
   * The failed pushes' LastError with its cause code: a hub failure (timeout or error) while the
   * backplane is down is the backplane's (asked once per batch, only when a push failed).
   */
  async function withCauses(outcomes: readonly Outcome<DispatchRow, DispatchResult>[]): Promise<Map<DispatchRow, PushResult>> {
    const failed = outcomes.filter((o) => o.status === 'done' && o.result?.kind === 'transient' && o.result.code !== PUSH_FAILURE.frameBuild);
    const down = failed.length > 0 && deps.hub.health ? (await deps.hub.health().catch(() => 'down')) === 'down' : false;
    const coded = new Map<DispatchRow, PushResult>();
    for (const o of outcomes) {
      if (o.status !== 'done' || o.result?.kind !== 'transient') continue;
      const code = o.result.code === PUSH_FAILURE.frameBuild ? o.result.code : down ? PUSH_FAILURE.backplaneDown : (o.result.code ?? PUSH_FAILURE.failed);
      coded.set(o.row, { kind: 'transient', code, error: codedLastError(code, o.result.error) });
    }
    return coded;
  }

  /** A row the stop left unpushed was skipped; a push that threw (it catches its own errors) is transient. */
  const rowOutcomeOf = (o: Outcome<DispatchRow, DispatchResult>, coded: Map<DispatchRow, PushResult>): RowOutcome => {
    const result: PushResult =
      o.status === 'released' ? { kind: 'skipped' }
      : o.status === 'done' ? (coded.get(o.row) ?? o.result!)
      : { kind: 'transient', error: codedLastError(PUSH_FAILURE.failed, lastErrorText(o.error)) };
    return outcomeOf(result, o.row.attempts, maxAttempts);
  };

  const toUpdate = (row: ClaimedRow, o: RowOutcome, now: Date): OutcomeUpdate => ({
    id: row.id,
    rowVersion: row.rowVersion,
    status: o.status === 'Released' ? 'Pending' : o.status,
    lastError: 'lastError' in o ? o.lastError : null,
    // A released row gives its attempt back and is claimable at once.
    attemptsDelta: o.status === 'Released' ? -1 : 0,
    nextAttemptAt: o.status === 'Released' ? now : null,
  });

  /**
   * Step 5's outcomes, one statement for the batch, each landing only on the RowVersion its claim
   * left (a runbook requeue or another runner's claim in between wins: `overtaken`); then the
   * counts, metrics and log lines of the rows whose outcome landed.
   */
  async function record(outcomes: readonly Outcome<DispatchRow, DispatchResult>[], run: BatchRun): Promise<void> {
    const now = run.now();
    const pushed = outcomes.filter((o) => !o.row.exhausted);
    const coded = await withCauses(pushed);
    const decided = pushed.map((o) => ({ row: o.row, outcome: rowOutcomeOf(o, coded), missing: o.status === 'done' && o.result?.kind === 'missing' }));
    const landed = await recordOutcomes(
      deps.db,
      decided.map((d) => toUpdate(d.row, d.outcome, now)),
      now,
    );
    // Per row on the hot path: count per kind and increment once; build log lines only when logged.
    const dispatchedByKind = new Map<string, number>();
    const logDispatched = run.log.isLevelEnabled('info');
    for (const { row, outcome, missing } of decided) {
      if (!landed.has(row.id)) {
        run.count('overtaken');
        run.log.debug({ entryId: row.id, kind: row.kind }, 'realtime outcome not recorded: the row changed since its claim');
      } else if (outcome.status === 'Done') {
        run.count('dispatched');
        dispatchedByKind.set(row.kind, (dispatchedByKind.get(row.kind) ?? 0) + 1);
        metrics.lag.observe({ kind: row.kind }, Math.max(0, (now.getTime() - row.createdAt.getTime()) / 1000));
        if (logDispatched) run.log.info({ kind: row.kind, chatId: row.chatId, targetUserId: row.targetUserId, seq: row.seq, attempts: row.attempts }, 'realtime dispatched');
      } else if (outcome.status === 'Pending') {
        run.count('retried');
        metrics.retried.inc({ kind: row.kind });
        run.log.warn({ entryId: row.id, kind: row.kind, attempts: row.attempts, errorCode: outcome.lastError }, 'realtime dispatch retry');
      } else if (outcome.status === 'Quarantined') {
        alert(row, missing ? 'ref_not_found' : 'attempts_exhausted', run);
      }
    }
    for (const [kind, n] of dispatchedByKind) metrics.dispatched.inc({ kind }, n);
  }

  return { claim, push, record };
}
