import { TOPICS } from '../../../../src/event-topics.ts';
import { FAST_BATCH, repeat, type Replica, type Stack } from '../stack.ts';
import { loadProblems, missingProblem, topicEvents, type Workload } from '../workload.ts';

/**
 * Seed 003, AccessFanOutJob: a role held by every user has its permissions changed through REST
 * all run long; above the inline threshold each change queues a fan-out task. At the end every task
 * is Completed and every user of the role has a UserAccessChanged of that task's Version; repeats
 * (distinct events for the same user and Version) stay within one batch per task.
 */
export async function fanOutWorkload(stack: Stack, front: Replica, userIds: readonly string[]): Promise<Workload> {
  const role = await stack.call<{ id: string }>(front, 'POST', '/api/identity/roles', { code: 'fault.role', name: 'Fault role', permissions: ['deals.read'] });
  if (role.status !== 201) throw new Error(`create role: ${role.status} ${JSON.stringify(role.body)}`);
  for (const userId of userIds) {
    const grant = await stack.call(front, 'POST', '/api/identity/role-assignments', { roleId: role.body.id, userId, scopeType: 'Platform' });
    if (grant.status !== 201) throw new Error(`grant: ${grant.status} ${JSON.stringify(grant.body)}`);
  }
  const tasks: { id: string; version: number }[] = [];
  // Often enough that most lives of the worker process find a fan-out to do (the kill suite counts kills while working).
  const load = repeat(1500, async () => {
    const permissions = tasks.length % 2 === 0 ? ['deals.read', 'deals.write'] : ['deals.read'];
    const res = await stack.call<{ role: { version: number }; fanOut: { mode: string; taskId: string | null } }>(
      front,
      'PUT',
      `/api/identity/roles/${role.body.id}/permissions`,
      { permissions },
    );
    if (res.status !== 200 || res.body.fanOut.mode !== 'queued') throw new Error(`set permissions: ${res.status} ${JSON.stringify(res.body)}`);
    tasks.push({ id: res.body.fanOut.taskId!, version: res.body.role.version });
  });
  const pool = stack.database.pool;
  const unfinished = async () =>
    (
      await pool.query<{ id: string; status: string }>(
        `select id, status from identity.access_fanout_tasks where status <> 'Completed' and (id = any($1) or parent_id = any($1))`,
        [tasks.map((t) => t.id)],
      )
    ).rows;

  return {
    fault: 'sigkill-access-fanout',
    progress: async () => (await pool.query<{ n: number }>(`select coalesce(sum(processed_count), 0)::int as n from identity.access_fanout_tasks`)).rows[0]!.n,
    stop: () => load.stop(),
    drained: async () => (await unfinished()).length === 0,
    async verdict(run) {
      const events = (await topicEvents(stack, TOPICS.identityAccess, tasks.length * userIds.length)).filter(
        (e) => e.payload.ChangeReason === 'RolePermissionsChanged',
      );
      const problems: string[] = [];
      let seen = 0;
      let duplicated = 0;
      for (const task of tasks) {
        const ofTask = events.filter((e) => e.payload.Version === task.version);
        const idsPerUser = new Map<string, Set<string>>();
        for (const e of ofTask) idsPerUser.set(String(e.payload.UserId), (idsPerUser.get(String(e.payload.UserId)) ?? new Set()).add(e.messageId));
        const missing = userIds.filter((u) => !idsPerUser.has(u));
        problems.push(...missingProblem(`users without the event of task ${task.id} (Version ${task.version})`, missing));
        seen += userIds.length - missing.length;
        // A repeated page writes new events (new ids); a re-publish repeats one id.
        const repeats = [...idsPerUser.values()].reduce((n, ids) => n + ids.size - 1, 0);
        if (repeats > FAST_BATCH.fanOut) problems.push(`task ${task.id}: ${repeats} users announced again, more than one batch (${FAST_BATCH.fanOut})`);
        duplicated += ofTask.length - idsPerUser.size;
      }
      const stuck = await unfinished();
      if (stuck.length > 0) problems.push(`${stuck.length} tasks not Completed, e.g. ${JSON.stringify(stuck.slice(0, 3))}`);
      return { expected: tasks.length * userIds.length, seen, duplicated, problems: [...problems, ...loadProblems('set-permissions', load, run)] };
    },
  };
}
