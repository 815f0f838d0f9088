import { defineModule, type ModuleDeps, type ModuleParts } from '../../platform/module.ts';
import type { NotificationsContext } from './context.ts';
import { notificationsCleanupJob } from './cleanup.job.ts';
import { dispatcherJob } from './delivery/dispatcher.job.ts';
import type { DeliveryDeps } from './delivery/outcomes.ts';
import { retryWorkerJob } from './delivery/retry-worker.job.ts';
import { messagePostedConsumer } from './message-posted.consumer.ts';
import { createNotificationMetrics } from './metrics.ts';
import { createProviders } from './providers/registry.ts';
import { registerNotificationRoutes } from './routes.ts';
import { terminalFailureSource } from './terminal-failures/ops-failures.ts';
import { registerTerminalFailureRoutes } from './terminal-failures/routes.ts';
import { registerUnconfirmedRoutes } from './unconfirmed/routes.ts';
import { STATUS_FRAME_KINDS } from './status-frames.ts';
import { NOTIFICATIONS_DEFAULTS, notificationsTuningProblems } from './defaults.ts';
import { deliveryJobOptions, notificationsSettings, type NotificationsSettings, type NotificationsTuning } from './settings.ts';
import { registerWebhookRoutes } from './webhooks/routes.ts';
import { refuseStreamRefusedUsers } from './refused-users.ts';

export type { NotificationDispatchedEvent } from './events.ts';
export { NOTIFICATIONS_DEFAULTS, type NotificationsTuning } from './defaults.ts';
export { NOTIFICATION_DISPATCHED_EVENT } from './events.ts';

/**
 * notifications (seed 004, UC-NTF-003): in-app, email, SMS and push delivery with a dispatcher for
 * Pending rows, NotificationRetryWorker for Failed ones, delivery webhooks, mark-read, the
 * final-outcome event NotificationDispatchedEvent on pin.notifications.dispatched.v1, and the
 * NotificationStatusChanged hub frames written through the kernel's push part (a carried kind it registers,
 * push.userFrames, status-frames.ts), so they carry Cursor and join the user's event stream.
 */
export function notificationsModule(overrides: Partial<NotificationsTuning> = {}) {
  const tuning: NotificationsTuning = { ...NOTIFICATIONS_DEFAULTS, ...overrides };
  // The one check at construction: a test's overrides are held to what the service runs with.
  const problems = notificationsTuningProblems(tuning);
  if (problems.length > 0) throw new Error(`invalid notifications options: ${problems.join('; ')}`);
  return defineModule(notificationsSettings, (deps) => notificationsParts(deps, tuning));
}

export default notificationsModule();

function notificationsParts(deps: ModuleDeps<NotificationsSettings>, tuning: NotificationsTuning): ModuleParts {
  const { settings: config } = deps;
  const log = deps.log.child({ module: 'notifications' });
  const providers = createProviders(config, { hub: deps.hub, clock: deps.clock, timeoutMs: tuning.providerTimeoutMs });
  const metrics = createNotificationMetrics(deps.registry, { db: deps.db, providers, clock: deps.clock });
  // Its status frames are carried by the kernel's push part: registered here, written with each change.
  deps.push.registerKinds(STATUS_FRAME_KINDS);
  const userFrames = deps.push.userFrames;
  const ctx: NotificationsContext = { config, tuning, db: deps.db, clock: deps.clock, log, metrics, providers, userFrames };
  const delivery: DeliveryDeps = { db: deps.db, providers, metrics, hub: deps.hub, userFrames };
  const jobs = deliveryJobOptions(tuning);

  return {
    name: 'notifications',
    routes: async (app) => {
      app.addHook('onClose', () => providers.close());
      refuseStreamRefusedUsers(app, deps.push.kinds, deps.db);
      registerNotificationRoutes(app, ctx);
      registerTerminalFailureRoutes(app, ctx);
      registerUnconfirmedRoutes(app, ctx);
      await registerWebhookRoutes(app, ctx);
    },
    jobs: [
      dispatcherJob(delivery, jobs.dispatcher),
      retryWorkerJob(delivery, jobs.retryWorker),
      notificationsCleanupJob(deps.db, { collapseWindowMs: config.NOTIFICATIONS_CHAT_COLLAPSE_WINDOW }),
    ],
    consumers: [messagePostedConsumer({ hub: deps.hub, clock: deps.clock, providers, metrics, log, collapseWindowMs: config.NOTIFICATIONS_CHAT_COLLAPSE_WINDOW })],
    opsFailures: [terminalFailureSource(ctx)],
    opsBacklogs: [
      { metric: 'notifications_unsent', title: 'Notifications not Sent, by status (terminal = failed for good)', alert: 'NotificationsTerminalFailures' },
      { metric: 'notifications_failed_backlog', title: 'Notifications waiting for a retry, by channel', alert: 'NotificationsFailedBacklogGrowing' },
      { metric: 'notifications_unconfirmed', title: 'Notifications whose send may have gone out unrecorded', alert: 'NotificationsEmailUnconfirmed' },
    ],
  };
}
