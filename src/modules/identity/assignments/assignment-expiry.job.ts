import type { Db } from '../../../platform/db/index.ts';
import type { JobContext, JobDefinition } from '../../../platform/jobs/index.ts';
import { enqueue } from '../../../platform/outbox/index.ts';
import { expireDueAssignments, loadAccessSnapshots } from './access-sql.ts';
import { accessChangedEvent } from './assignments.ts';
import type { IdentityMetrics } from '../metrics.ts';

/**
 * Marks role assignments past ExpiresAt as Expired and announces each affected user
 * (ChangeReason AssignmentExpired, Version = the user's new max(RoleAssignment.Version)). Snapshots
 * already leave such assignments out; this makes the change visible to consumers that cached the
 * old one. One transaction per batch of users: their assignments, and their events.
 */

export const ASSIGNMENT_EXPIRY_JOB = 'identity-assignment-expiry';

export interface AssignmentExpiryOptions {
  db: Db;
  metrics: IdentityMetrics;
  intervalMs: number;
  batchSize: number;
}

export function createAssignmentExpiryWorker(opts: AssignmentExpiryOptions) {
  if (!Number.isInteger(opts.batchSize) || opts.batchSize < 1) throw new Error('assignment expiry: batchSize must be a positive integer');

  async function runOnce(ctx: Pick<JobContext, 'jobRunId' | 'signal' | 'log' | 'now'>): Promise<{ users: number; batches: number }> {
    const counts = { users: 0, batches: 0 };
    while (!ctx.signal.aborted) {
      const { users, candidates } = await opts.db.transaction(async (tx) => {
        const now = ctx.now();
        const batch = await expireDueAssignments(tx, now, opts.batchSize);
        const versions = new Map(batch.users.map((u) => [u.userId, u.version]));
        const snapshots = await loadAccessSnapshots(
          tx,
          batch.users.map((u) => u.userId),
          now,
        );
        await enqueue(
          tx,
          snapshots.map((s) =>
            accessChangedEvent(s, { reason: 'AssignmentExpired', version: versions.get(s.userId)!, occurredAt: now, correlationId: ctx.jobRunId }),
          ),
        );
        return batch;
      });
      if (users.length > 0) {
        counts.users += users.length;
        counts.batches += 1;
        opts.metrics.accessEvents.inc({ reason: 'AssignmentExpired' }, users.length);
        ctx.log.info({ users: users.length }, 'expired role assignments announced');
      }
      // Users held by another transaction were skipped; they are picked up on the next run.
      if (candidates < opts.batchSize || users.length === 0) break;
    }
    return counts;
  }

  return { runOnce };
}

export function assignmentExpiryJob(opts: AssignmentExpiryOptions): JobDefinition {
  const worker = createAssignmentExpiryWorker(opts);
  return { name: ASSIGNMENT_EXPIRY_JOB, every: opts.intervalMs, singleRunner: true, run: (ctx) => worker.runOnce(ctx) };
}
