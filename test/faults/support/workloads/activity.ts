import { randomUUID } from 'node:crypto';
import { TOPICS } from '../../../../src/event-topics.ts';
import { repeat, type Replica, type Stack } from '../stack.ts';
import { countBy, loadProblems, missingProblem, topicEvents, type Workload } from '../workload.ts';

/**
 * Seed 001, ActivityCloserJob: sessions with a view each are opened through REST all run long and
 * made stale at once (their clocks moved back an hour, past the inactivity threshold). At the end
 * every one is Inactive and has exactly one ended event in Kafka (one close: INV-SES-006,
 * INV-LV-008); more copies of that one event are the outbox's at-least-once and are counted.
 */
export function activityWorkload(stack: Stack, front: Replica): Workload {
  const pool = stack.database.pool;
  const sessions: string[] = [];
  const views: string[] = [];
  const load = repeat(1000, async () => {
    const start = await fetch(`${front.url}/api/user-activity/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ anonymousId: `fault-device-${randomUUID()}`, device: { userAgent: 'faults', ipAddress: '192.0.2.10' } }),
    });
    if (start.status !== 201) throw new Error(`start session: ${start.status} ${await start.text()}`);
    const session = (await start.json()) as { id: string; deviceSecret: string };
    const open = await fetch(`${front.url}/api/user-activity/property-object-views`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-device-secret': session.deviceSecret },
      body: JSON.stringify({ sessionId: session.id, propertyObjectId: randomUUID(), viewSource: 'Catalog' }),
    });
    if (open.status !== 201) throw new Error(`open view: ${open.status} ${await open.text()}`);
    const view = (await open.json()) as { id: string };
    // Idle for an hour, as far as the closer can tell (the threshold is 10..15 minutes).
    await pool.query(
      `update user_activity.property_object_views set created_at = created_at - interval '1 hour', last_activity_at = last_activity_at - interval '1 hour' where id = $1`,
      [view.id],
    );
    await pool.query(
      `update user_activity.sessions set created_at = created_at - interval '1 hour', last_activity_at = last_activity_at - interval '1 hour' where id = $1`,
      [session.id],
    );
    sessions.push(session.id);
    views.push(view.id);
  });

  const active = async () =>
    (
      await pool.query<{ n: number }>(
        `select (select count(*) from user_activity.sessions where status = 'Active' and id = any($1))
              + (select count(*) from user_activity.property_object_views where status = 'Active' and id = any($2)) as n`,
        [sessions, views],
      )
    ).rows[0]!.n;

  /** Per closed entity: distinct ended events (closes) and all copies; checks one close each. */
  async function closes(topic: string, idField: string, ids: readonly string[]) {
    const events = await topicEvents(stack, topic, ids.length);
    const byEntity = new Map<string, Set<string>>();
    for (const e of events) {
      const id = String(e.payload[idField]);
      byEntity.set(id, (byEntity.get(id) ?? new Set()).add(e.messageId));
    }
    const missing = ids.filter((id) => !byEntity.has(id));
    const twice = ids.filter((id) => (byEntity.get(id)?.size ?? 0) > 1);
    const copies = [...countBy(events, (e) => e.messageId).values()].reduce((n, c) => n + c - 1, 0);
    return { missing, twice, duplicated: copies + twice.length };
  }

  return {
    fault: 'sigkill-activity-closer',
    progress: async () =>
      (
        await pool.query<{ n: number }>(
          `select ((select count(*) from user_activity.sessions where status = 'Inactive') + (select count(*) from user_activity.property_object_views where status = 'Inactive'))::int as n`,
        )
      ).rows[0]!.n,
    stop: () => load.stop(),
    drained: async () => Number(await active()) === 0,
    async verdict(run) {
      const s = await closes(TOPICS.sessionEnded, 'SessionId', sessions);
      const v = await closes(TOPICS.propertyObjectViewEnded, 'PropertyObjectViewId', views);
      const stillActive = Number(await active());
      const expected = sessions.length + views.length;
      return {
        expected,
        seen: expected - s.missing.length - v.missing.length,
        duplicated: s.duplicated + v.duplicated,
        problems: [
          ...(stillActive > 0 ? [`${stillActive} stale sessions/views still Active`] : []),
          ...missingProblem('session-ended events', s.missing),
          ...missingProblem('view-ended events', v.missing),
          ...(s.twice.length + v.twice.length > 0 ? [`closed twice (two distinct ended events): ${[...s.twice, ...v.twice].slice(0, 3).join(', ')}`] : []),
          ...loadProblems('session', load, run),
        ],
      };
    },
  };
}
