import { identitySettings } from './settings.ts';
import { defineModule } from '../../platform/module.ts';
import { accessFanOutJob } from './access-fanout/access-fanout.job.ts';
import { failedFanOutSource } from './access-fanout/ops-failures.ts';
import { assignmentExpiryJob } from './assignments/assignment-expiry.job.ts';
import { identitySettingsFrom, type IdentityContext } from './context.ts';
import { createIdentityMetrics } from './metrics.ts';
import { registerIdentityRoutes } from './http/routes.ts';
import { IdentityErrors } from './errors.ts';
import { findUser } from './users/user-sql.ts';
import type { Principal } from '../../platform/http/index.ts';

/**
 * The identity context: the user registry (producer of pin.identity.users.v1), roles, permissions
 * and assignments (producer of pin.identity.access.v1), the AccessFanOutJob queue worker and the
 * assignment expiry worker. Its integration-event contracts live in src/contracts/identity-events.ts,
 * where producer and consumers both read them.
 */
export default defineModule(identitySettings, (deps) => {
  const settings = identitySettingsFrom(deps.settings);
  const ctx: IdentityContext = {
    db: deps.db,
    clock: deps.clock,
    log: deps.log.child({ module: 'identity' }),
    metrics: createIdentityMetrics(deps.registry, deps.db, deps.clock),
    settings,
  };
  return {
    name: 'identity',
    routes: (app) => registerIdentityRoutes(app, ctx),
    // An admin token outlives its user's blocking: an admin identity knows as not Active is refused
    // on every admin route. One it does not know (an operator account elsewhere) passes.
    adminCheck: Object.assign(
      async (principal: Principal) => {
        const user = await findUser(ctx.db, principal.userId);
        if (user && user.status !== 'Active') throw IdentityErrors.adminInactive();
      },
      { codes: ['IDENTITY_ADMIN_INACTIVE'] },
    ),
    jobs: [
      accessFanOutJob({ db: ctx.db, metrics: ctx.metrics, settings: settings.fanOut }),
      assignmentExpiryJob({ db: ctx.db, metrics: ctx.metrics, settings: settings.expiry }),
    ],
    opsFailures: [failedFanOutSource(ctx)],
    opsBacklogs: [
      { metric: 'identity_access_fanout_queue_backlog', title: 'Access fan-out tasks waiting (Pending, or InProgress with an expired lease)', alert: 'IdentityAccessFanoutBacklog' },
      { metric: 'identity_access_fanout_tasks_in_progress', title: 'Access fan-out tasks held by a worker' },
      { metric: 'identity_access_fanout_oldest_backlog_age_seconds', title: 'Access fan-out: oldest waiting task (s)', alert: 'IdentityAccessFanoutBacklog' },
      { metric: 'identity_access_fanout_tasks_failed', title: 'Access fan-out tasks Failed (retry on the failures page)', alert: 'IdentityAccessFanoutTasksFailed' },
    ],
  };
});
