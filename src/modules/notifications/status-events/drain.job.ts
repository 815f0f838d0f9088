import type { Db } from '../../../platform/db/index.ts';
import { ReportedError } from '../../../platform/errors/index.ts';
import { batchPhase, defineBatchWorker, type BatchWorker } from '../../../platform/jobs/index.ts';
import type { Hub } from '../../../platform/realtime/index.ts';
import { NOTIFICATION_STATUS_CHANGED_EVENT, STATUS_EVENTS_JOB, STATUS_EVENTS_WAKE_CHANNEL } from '../model.ts';
import { deleteStatusEvents, oldestStatusEvents, type StatusEventRow } from './sql.ts';

/** The drain's timer; a commit that stores a frame wakes it at once (NOTIFY). */
export const STATUS_EVENTS_POLL_MS = 1000;
/** Frames per batch, and how long a run keeps taking batches. */
const BATCH_SIZE = 500;
const MAX_RUN_MS = 10_000;

/**
 * `notifications-status-events`: hands stored NotificationStatusChanged frames to the hub in the
 * order they were stored, one replica at a time (single runner), and deletes each the hub took. A
 * backplane that refuses (Redis down) fails those frames: they stay and the next tick — every
 * second, or at the next commit — tries again, so frames arrive late after an outage, never lost;
 * a process killed mid-run leaves them for the next holder. A frame may be pushed twice (the hub
 * took it, then the delete failed); clients keep the highest Version they saw.
 */
export function statusEventsJob(deps: { db: Db; hub: Hub }): BatchWorker {
  return defineBatchWorker({
    name: STATUS_EVENTS_JOB,
    every: STATUS_EVENTS_POLL_MS,
    singleRunner: true,
    wakeChannel: STATUS_EVENTS_WAKE_CHANNEL,
    // One at a time, so one user's frames reach the backplane in their order.
    settings: { batchSize: BATCH_SIZE, maxRunMs: MAX_RUN_MS, concurrency: 1 },
    counts: ['pushed'],
    phases: () => [
      batchPhase<StatusEventRow, void>({
        name: 'push',
        keyOf: (row) => String(row.id),
        claim: (limit, _run, exclude) => oldestStatusEvents(deps.db, limit, exclude),
        async process(row) {
          try {
            await deps.hub.send(`user:${row.recipientUserId}`, NOTIFICATION_STATUS_CHANGED_EVENT, row.frame);
          } catch (err) {
            // One line per batch from record(), not one per frame: an outage fails them all.
            throw new ReportedError('hub backplane refused the frame; kept for the next run', { cause: err });
          }
        },
        async record(outcomes, run) {
          const pushed = outcomes.filter((o) => o.status === 'done').map((o) => o.row.id);
          await deleteStatusEvents(deps.db, pushed);
          run.count('pushed', pushed.length);
          const failed = outcomes.filter((o) => o.status === 'failed');
          if (failed.length > 0) {
            const first = failed[0] as { error?: { cause?: unknown } };
            run.log.warn(
              { failed: failed.length, err: first.error?.cause },
              'notification_status_changed frames not pushed (hub backplane unreachable); kept and retried',
            );
            // The rest would fail the same way; the next tick tries again, in order.
            run.endPhase('hub unreachable');
          }
        },
      }),
    ],
  });
}
