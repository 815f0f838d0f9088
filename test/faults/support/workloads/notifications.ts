import { randomUUID } from 'node:crypto';
import type { Rng } from '../seed.ts';
import { FAST_BATCH, repeat, uniquePhone, type Replica, type Stack } from '../stack.ts';
import { countBy, loadProblems, missingProblem, type Workload } from '../workload.ts';

/**
 * Seed 004, the dispatcher and NotificationRetryWorker: SMS + push notifications are created through
 * REST all run long; the local provider (which, like real SMS gateways and push services, dedupes by
 * Idempotency-Key) refuses the first attempt of about a third of them with 503, so the retry worker
 * has work too. At the end every row is Sent and no recipient got a message twice (AC4, AC6).
 */
export async function notificationsWorkload(stack: Stack, front: Replica, rng: Rng): Promise<Workload> {
  for (const [channel, providerKey] of [['Sms', 'http-sms'], ['Push', 'http-push']] as const) {
    const res = await stack.call(front, 'PUT', `/api/notifications/channels/${channel}`, {
      isEnabled: true,
      providerKey,
      maxAttempts: 20,
      retryBackoff: { kind: 'Fixed', delaySeconds: 1 },
    });
    if (res.status !== 200) throw new Error(`channel ${channel}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  const recipients = Array.from({ length: 4 }, () => randomUUID());
  for (const userId of recipients) {
    const res = await stack.call(front, 'POST', '/api/notifications/push-tokens', { token: `device-${userId}`, platform: 'android' }, await stack.userToken(userId));
    if (res.status !== 204) throw new Error(`push token: ${res.status} ${JSON.stringify(res.body)}`);
  }
  const refused = new Set<string>();
  stack.provider.setRule((req) => {
    const id = String(req.body.clientReference);
    if (stack.provider.requestsFor(id).length > 1 || !rng.chance(1 / 3)) return undefined;
    refused.add(id);
    return { status: 503, body: { error: 'busy' } };
  });

  const rows: string[] = [];
  let n = 0;
  const load = repeat(1000, async () => {
    const res = await stack.call<{ notifications: { id: string; channel: string }[] }>(front, 'POST', '/api/notifications', {
      recipientUserId: rng.pick(recipients),
      title: 'Viewing confirmed',
      body: `Tomorrow at 10:00 (${++n})`,
      channels: ['Sms', 'Push'],
      phone: uniquePhone(5_000_000 + n),
    });
    if (res.status !== 201) throw new Error(`notify: ${res.status} ${JSON.stringify(res.body)}`);
    rows.push(...res.body.notifications.filter((x) => x.channel === 'Sms' || x.channel === 'Push').map((x) => x.id));
  });
  const notSent = async () =>
    (
      await stack.database.pool.query<{ id: string; status: string; attempts: number }>(
        `select id, status, attempts from notifications.notifications where id = any($1) and status <> 'Sent'`,
        [rows],
      )
    ).rows;

  return {
    fault: 'sigkill-notifications',
    progress: async () => (await stack.database.pool.query<{ n: number }>(`select count(*)::int as n from notifications.notifications where status = 'Sent'`)).rows[0]!.n,
    stop: () => load.stop(),
    drained: async () => (await notSent()).length === 0,
    async verdict(run) {
      const { kills } = run;
      // What recipients got: one message per Idempotency-Key (NotificationId:DeliveryCycle) accepted.
      const messagesPer = countBy([...stack.provider.delivered.keys()], (key) => key.split(':')[0]!);
      const twice = [...messagesPer].filter(([, count]) => count > 1).map(([id]) => id);
      const pending = await notSent();
      // Sends the provider accepted more than once (same key, so no second message): only a worker
      // killed between the acceptance and its commit resends, at most one batch per kill.
      const resent = rows.reduce((sum, id) => sum + Math.max(0, stack.provider.requestsFor(id).length - (refused.has(id) ? 1 : 0) - 1), 0);
      return {
        expected: rows.length,
        seen: rows.filter((id) => messagesPer.has(id)).length,
        duplicated: [...messagesPer.values()].reduce((sum, c) => sum + c - 1, 0),
        problems: [
          ...missingProblem('notifications not Sent', pending.map((p) => `${p.id} ${p.status}/${p.attempts}`)),
          ...(twice.length > 0 ? [`${twice.length} notifications reached their recipient twice, e.g. ${twice.slice(0, 3).join(', ')}`] : []),
          ...(resent > kills * FAST_BATCH.notifications ? [`${resent} accepted sends repeated, more than one batch per kill`] : []),
          ...(refused.size === 0 ? ['no first attempt was refused: the retry worker had nothing to do'] : []),
          ...loadProblems('notify', load, run),
        ],
      };
    },
  };
}
