import type { Db } from '../../../platform/db/index.ts';
import type { EventEnvelope } from '../../../platform/events/index.ts';
import { readBatchState, writeBatch } from './batch-sql.ts';
import {
  applied,
  applySnapshot,
  deactivated,
  enqueueDeactivations,
  eventIds,
  readEvent,
  skippedStale,
  type EventIds,
  type Report,
  type UserSyncDeps,
} from './apply.ts';
import { planSegment } from './batch-plan.ts';
import type { UserSnapshot } from './rules.ts';

/**
 * The batch path of MessengerUserUpsertedConsumer: the runner's group of fresh UserUpserted
 * events in a few statements instead of one to several per event. The leading events whose
 * outcome depends only on their own row (the common case) are read and written set-based; the
 * first unusual one (phone conflict, hand-over, a phone another event of the batch moves) goes
 * through the single path in the same transaction, then planning resumes after it. Each event
 * gets the single path's metrics and log lines, in order, once every statement has succeeded.
 *
 * Anything off the plan throws and the runner redoes the group message by message: an invalid
 * event (the single path dead-letters it), or a row a concurrent writer changed meanwhile.
 */

interface Item {
  event: EventEnvelope<unknown>;
  ids: EventIds;
  snapshot: UserSnapshot;
  /** The event's 'consumed' and truncation lines, emitted just before its outcome. */
  lines: (() => void)[];
}

export async function applyUserUpsertedBatch(events: readonly EventEnvelope<unknown>[], tx: Db, deps: UserSyncDeps): Promise<void> {
  const started = performance.now();
  const items: Item[] = events.map((event) => {
    const lines: (() => void)[] = [];
    const snapshot = readEvent(event, deps, (emit) => void lines.push(emit), false);
    return { event, ids: eventIds(event), snapshot, lines };
  });
  const queued: (() => void)[] = [];
  const report: Report = (emit) => void queued.push(emit);
  const linesOf = (item: Item) => queued.push(...item.lines);

  for (let from = 0; from < items.length; ) {
    const rest = items.slice(from);
    if (rest.length === 1) {
      linesOf(rest[0]!);
      await applySnapshot(tx, rest[0]!.snapshot, rest[0]!.ids, deps, report);
      break;
    }
    const snapshots = rest.map((item) => item.snapshot);
    const state = await readBatchState(tx, [...new Set(snapshots.map((s) => s.userId))], [...new Set(snapshots.map((s) => s.phoneNumber))]);
    const plan = planSegment(snapshots, state);
    const written = await writeBatch(tx, plan.writes, deps.clock.now());
    if (written !== plan.writes.length) throw new Error('replica rows changed while the batch was applied; redone message by message');
    await enqueueDeactivations(tx, deactivated(plan.writes.map((w) => [state.rows.get(w.snapshot.userId), w.snapshot])), deps.clock.now(), deps);
    for (const [k, planned] of plan.outcomes.entries()) {
      const item = rest[k]!;
      linesOf(item);
      if (planned.outcome === 'stale') skippedStale(deps, planned.snapshot, item.ids, planned.existing, report);
      else {
        const { outcome, snapshot } = planned;
        report(() => applied(deps, snapshot, item.ids, outcome, { phoneNumber: snapshot.phoneNumber, conflict: null }));
      }
    }
    if (plan.stop === rest.length) break;
    const unusual = rest[plan.stop]!;
    linesOf(unusual);
    await applySnapshot(tx, unusual.snapshot, unusual.ids, deps, report);
    from += plan.stop + 1;
  }

  for (const emit of queued) emit();
  const perEvent = (performance.now() - started) / items.length;
  for (const item of items) {
    deps.metrics.observeEvent(item.event.occurredAt);
    deps.metrics.consumeDuration.observe(perEvent);
  }
}
