import { isStale, releasedPhone, type ReplicaState, type UserSnapshot } from './rules.ts';

/**
 * Pure planning of the batch path: which leading events of a batch can be written set-based with
 * exactly the outcome the single path would give them in order, and the one row write per user
 * that leaves the same replica. It stops at the first event whose outcome depends on more than
 * its own row — a phone another live row holds (conflict, INV-MU-2), a phone an open conflict
 * waits for (hand-over), a phone another user of the segment took or let go of (the order of
 * those writes matters to the live-phone index) — which the single path then handles.
 */

/** A replica row as the batch read it; `revision` guards the write against concurrent changes. */
export interface KnownRow extends ReplicaState {
  revision: number;
}

/** What the batch read before planning. */
export interface BatchState {
  /** Replica rows of the batch's users (absent: first appearance). */
  rows: ReadonlyMap<string, KnownRow>;
  /** The live row holding each phone the batch asks for. */
  liveHolders: ReadonlyMap<string, string>;
  /** Phones an open conflict waits for, among those the batch asks for or may let go of. */
  wantedPhones: ReadonlySet<string>;
}

export type PlannedOutcome = { outcome: 'created' | 'updated'; snapshot: UserSnapshot } | { outcome: 'stale'; snapshot: UserSnapshot; existing: ReplicaState };

/** One write of a user's row: its last applied snapshot, after `writes` applied events. */
export interface RowWrite {
  snapshot: UserSnapshot;
  writes: number;
  /** The row's revision as read; null for a first appearance. */
  expectedRevision: number | null;
}

export interface SegmentPlan {
  /** Outcomes of events [0, stop), in order. */
  outcomes: PlannedOutcome[];
  writes: RowWrite[];
  /** The first event the single path must handle; `snapshots.length` when there is none. */
  stop: number;
}

export function planSegment(snapshots: readonly UserSnapshot[], state: BatchState): SegmentPlan {
  /** Each user's row as the events so far leave it. */
  const current = new Map<string, ReplicaState | null>();
  /** Phones taken live or let go of by a user in this segment. */
  const touchedBy = new Map<string, string>();
  const writes = new Map<string, RowWrite>();
  const outcomes: PlannedOutcome[] = [];
  const touchedByOther = (phone: string, userId: string) => {
    const by = touchedBy.get(phone);
    return by !== undefined && by !== userId;
  };

  for (const [i, s] of snapshots.entries()) {
    const existing = current.has(s.userId) ? current.get(s.userId)! : (state.rows.get(s.userId) ?? null);
    if (isStale(existing, s.version)) {
      outcomes.push({ outcome: 'stale', snapshot: s, existing: existing! });
      continue;
    }
    const next = { phoneNumber: s.phoneNumber, isActive: s.isActive };
    const released = releasedPhone(existing, next);
    if (s.isActive) {
      const holder = state.liveHolders.get(s.phoneNumber);
      if ((holder !== undefined && holder !== s.userId) || touchedByOther(s.phoneNumber, s.userId)) return { outcomes, writes: [...writes.values()], stop: i };
    }
    if (released !== null && (state.wantedPhones.has(released) || touchedByOther(released, s.userId))) {
      return { outcomes, writes: [...writes.values()], stop: i };
    }
    if (s.isActive) touchedBy.set(s.phoneNumber, s.userId);
    if (released !== null) touchedBy.set(released, s.userId);
    current.set(s.userId, { ...next, version: s.version });
    const write = writes.get(s.userId);
    if (write) {
      write.snapshot = s;
      write.writes += 1;
    } else {
      writes.set(s.userId, { snapshot: s, writes: 1, expectedRevision: state.rows.get(s.userId)?.revision ?? null });
    }
    outcomes.push({ outcome: existing === null ? 'created' : 'updated', snapshot: s });
  }
  return { outcomes, writes: [...writes.values()], stop: snapshots.length };
}
