import type { Db } from '../../../platform/db/index.ts';
import { defineSweep, type BatchRun, type BatchWorker } from '../../../platform/jobs/index.ts';
import type { AssignmentExpirySettings } from '../context.ts';
import type { IdentityMetrics } from '../metrics.ts';
import { enqueueAccessEvents } from './access-events.ts';
import { expireDueAssignments, loadAccessSnapshots, usersWithDueAssignments, type UserVersion } from './access-sql.ts';
import { accessChangedEvent } from './assignments.ts';

/**
 * Marks role assignments past ExpiresAt as Expired and announces each affected user
 * (ChangeReason AssignmentExpired, Version = the user's new max(RoleAssignment.Version)). Snapshots
 * already leave such assignments out; this makes the change visible to consumers that cached the
 * old one. The claim does the work: one transaction per batch of users expires their assignments
 * and writes their events; if it fails, the kernel redoes its users one at a time.
 */

export const ASSIGNMENT_EXPIRY_JOB = 'identity-assignment-expiry';

export interface AssignmentExpiryOptions {
  db: Db;
  metrics: IdentityMetrics;
  settings: AssignmentExpirySettings;
}

export function assignmentExpiryJob(opts: AssignmentExpiryOptions): BatchWorker {
  const { db, metrics, settings } = opts;

  /** Expires the due assignments of a batch of users (or of one) and announces them, in one transaction. */
  async function expireAndAnnounce(run: BatchRun, which: { limit: number; exclude?: readonly string[]; userId?: string }): Promise<UserVersion[]> {
    const users = await db.transaction(async (tx) => {
      const now = run.now();
      const expired = await expireDueAssignments(tx, { now, ...which });
      const versions = new Map(expired.map((u) => [u.userId, u.version]));
      const snapshots = await loadAccessSnapshots(
        tx,
        expired.map((u) => u.userId),
        now,
      );
      await enqueueAccessEvents(
        tx,
        snapshots.map((s) =>
          accessChangedEvent(s, { reason: 'AssignmentExpired', version: versions.get(s.userId)!, occurredAt: now, correlationId: run.jobRunId }),
        ),
      );
      return expired;
    });
    if (users.length > 0) {
      metrics.accessEvents.inc({ reason: 'AssignmentExpired' }, users.length);
      run.log.info({ users: users.length }, 'expired role assignments announced');
    }
    return users;
  }

  return defineSweep({
    name: ASSIGNMENT_EXPIRY_JOB,
    every: settings.intervalMs,
    batchSize: settings.batchSize,
    // A run starts no new batch once its interval has passed; the next run goes on.
    maxRunMs: settings.intervalMs,
    steps: [
      {
        name: 'expire',
        count: 'expired',
        keyOf: (u: UserVersion) => u.userId,
        // Users another transaction holds were skipped: a short batch ends the run, the next takes them.
        sweep: (limit, run, _state, exclude) => expireAndAnnounce(run, { limit, exclude }),
        oneByOne: {
          candidates: (limit, run, _state, exclude) => usersWithDueAssignments(db, run.now(), limit, exclude),
          sweepOne: (userId, run) => expireAndAnnounce(run, { limit: 1, userId }),
        },
      },
    ],
  });
}
