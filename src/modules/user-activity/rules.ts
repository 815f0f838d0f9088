/**
 * Domain rules of sessions and property-object views as plain functions (no I/O): the close
 * transition, inactivity cutoffs, the link decision.
 */

export type ActivityStatus = 'Active' | 'Inactive';
export type SessionEndReason = 'Inactivity' | 'Switched';

/** What the close transition needs from a row (session or view). */
export interface OpenRow {
  id: string;
  status: ActivityStatus | string;
  createdAt: Date;
  lastActivityAt: Date;
}

export interface CloseTransition {
  id: string;
  status: 'Inactive';
  endedAt: Date;
  durationSeconds: number;
}

export class NotActiveError extends Error {
  constructor(id: string) {
    super(`row ${id} is not Active`);
    this.name = 'NotActiveError';
  }
}

/**
 * Duration = LastActivityAt − CreatedAt in whole seconds (seed 001 step 4). Not clamped: a negative
 * value means broken data and must trip chk_*_duration_nonneg instead of being hidden as 0.
 */
export function durationSeconds(createdAt: Date, lastActivityAt: Date): number {
  return Math.floor((lastActivityAt.getTime() - createdAt.getTime()) / 1000);
}

/** Active → Inactive; guard Status == Active (INV-SES-006 / INV-LV-008: a row is closed once). */
export function closeTransition(row: OpenRow, now: Date): CloseTransition {
  if (row.status !== 'Active') throw new NotActiveError(row.id);
  return { id: row.id, status: 'Inactive', endedAt: now, durationSeconds: durationSeconds(row.createdAt, row.lastActivityAt) };
}

/** cutoff = now − InactivityThreshold: Active rows idle since before it are closed. */
export const inactivityCutoff = (now: Date, thresholdMs: number): Date => new Date(now.getTime() - thresholdMs);

/** The "stuck backlog" alert line: Active rows idle for more than 2 × InactivityThreshold. */
export const stuckCutoff = (now: Date, thresholdMs: number): Date => new Date(now.getTime() - 2 * thresholdMs);

/** Idle past the cutoff (strictly older, as the seed's `now − LastActivityAt > threshold`). */
export const isIdle = (lastActivityAt: Date, cutoff: Date): boolean => lastActivityAt.getTime() < cutoff.getTime();

/**
 * Linking an Active session to a user: a guest session takes the user; a session of the same user
 * stays; a session of another user is closed as Switched and a new one starts for this user.
 */
export type LinkDecision = 'link' | 'already-linked' | 'switch';

export function linkDecision(sessionUserId: string | null, userId: string): LinkDecision {
  if (sessionUserId === null) return 'link';
  return sessionUserId === userId ? 'already-linked' : 'switch';
}

