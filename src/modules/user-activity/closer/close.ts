import type { Db } from '../../../platform/db/index.ts';
import { enqueue, type NewEvent } from '../../../platform/outbox/index.ts';
import { propertyObjectViewEndedEvent, sessionEndedEvent, type ClosedSession, type ClosedView, type SessionOwner } from '../events.ts';
import { closeTransition, type CloseTransition, type SessionEndReason } from '../rules.ts';
import { markSessionsClosed, type SessionRow } from '../sessions/session-sql.ts';
import { lockOpenViewsOfSessions, markViewsClosed, type OwnedViewRow, type ViewRow } from '../views/view-sql.ts';

/**
 * The close operations every writer shares (closer phases A and B, link's Switched close): compute
 * the transitions, write them set-based, and enqueue one ended-event per closed row in the same
 * transaction. Callers hold the row locks already.
 */

export interface ClosedRows {
  sessions: ClosedSession[];
  views: ClosedView[];
}

/** A set-based update touched fewer rows than were locked: something broke the locking contract. */
export class CloseMismatchError extends Error {
  constructor(what: string, expected: number, actual: number) {
    super(`${what}: expected to close ${expected} rows, closed ${actual}`);
    this.name = 'CloseMismatchError';
  }
}

const closedView = (v: ViewRow, t: CloseTransition): ClosedView => ({
  id: v.id,
  sessionId: v.sessionId,
  propertyObjectId: v.propertyObjectId,
  viewSource: v.viewSource,
  filterSnapshot: v.filterSnapshot,
  createdAt: v.createdAt,
  lastActivityAt: v.lastActivityAt,
  endedAt: t.endedAt,
  durationSeconds: t.durationSeconds,
});

const closedSession = (s: SessionRow, t: CloseTransition): ClosedSession => ({
  id: s.id,
  anonymousId: s.anonymousId,
  userId: s.userId,
  createdAt: s.createdAt,
  lastActivityAt: s.lastActivityAt,
  endedAt: t.endedAt,
  durationSeconds: t.durationSeconds,
});

async function writeViewCloses(tx: Db, views: readonly ViewRow[], now: Date): Promise<ClosedView[]> {
  const transitions = views.map((v) => closeTransition(v, now));
  const updated = await markViewsClosed(tx, transitions);
  if (updated !== transitions.length) throw new CloseMismatchError('property_object_views', transitions.length, updated);
  return views.map((v, i) => closedView(v, transitions[i]!));
}

/**
 * Closes sessions the caller has locked FOR UPDATE, with all their still-open views whatever the
 * views' own LastActivityAt (INV-SES-005, INV-LV-007): views are locked after their sessions, closed,
 * then the sessions; the events of all of them go into the outbox in the same transaction.
 */
export async function closeLockedSessions(
  tx: Db,
  sessions: readonly SessionRow[],
  now: Date,
  reason: SessionEndReason,
  correlationId: string | null,
): Promise<ClosedRows> {
  if (sessions.length === 0) return { sessions: [], views: [] };
  const views = await lockOpenViewsOfSessions(
    tx,
    sessions.map((s) => s.id),
  );
  const closedViews = await writeViewCloses(tx, views, now);
  const transitions = sessions.map((s) => closeTransition(s, now));
  const updated = await markSessionsClosed(tx, transitions, reason);
  if (updated !== transitions.length) throw new CloseMismatchError('sessions', transitions.length, updated);
  const closedSessions = sessions.map((s, i) => closedSession(s, transitions[i]!));

  const owners = new Map<string, SessionOwner>(sessions.map((s) => [s.id, { anonymousId: s.anonymousId, userId: s.userId }]));
  const events: NewEvent[] = [
    ...closedViews.map((v) => propertyObjectViewEndedEvent(v, owners.get(v.sessionId)!, correlationId)),
    ...closedSessions.map((s) => sessionEndedEvent(s, correlationId)),
  ];
  await enqueue(tx, events);
  return { sessions: closedSessions, views: closedViews };
}

/** Closes hanging views the caller has locked (phase A); their sessions stay Active (INV-LV-004). */
export async function closeLockedViews(
  tx: Db,
  views: readonly OwnedViewRow[],
  now: Date,
  correlationId: string | null,
): Promise<ClosedView[]> {
  if (views.length === 0) return [];
  const closedViews = await writeViewCloses(tx, views, now);
  await enqueue(
    tx,
    closedViews.map((v, i) =>
      propertyObjectViewEndedEvent(v, { anonymousId: views[i]!.ownerAnonymousId, userId: views[i]!.ownerUserId }, correlationId),
    ),
  );
  return closedViews;
}
