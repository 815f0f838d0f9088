import { countBy, missingProblem, topicEvents, type Workload } from '../workload.ts';
import { FAST_BATCH, type Stack } from '../stack.ts';

/**
 * The outbox publisher (platform): every integration event the other loads commit — UserUpserted,
 * UserAccessChanged, session/view ended, MessagePosted, NotificationDispatched — is an outbox row; at
 * the end every row is marked published and is in Kafka under its message id. Copies of a row
 * (published, killed before the mark, published again) are at-least-once: at most the two batches a
 * kill can find sent and unmarked (the one being marked, the one being sent).
 */
export function outboxWorkload(stack: Stack): Workload {
  const pool = stack.database.pool;
  const unpublished = async () =>
    (await pool.query<{ n: number }>(`select count(*)::int as n from platform.outbox where published_at is null`)).rows[0]!.n;
  return {
    fault: 'sigkill-outbox-publisher',
    // Its load is everybody else's.
    stop: async () => undefined,
    drained: async () => (await unpublished()) === 0,
    progress: async () => (await pool.query<{ n: number }>(`select count(*)::int as n from platform.outbox where published_at is not null`)).rows[0]!.n,
    async verdict({ kills }) {
      const { rows } = await pool.query<{ id: string; topic: string }>(`select id::text, topic from platform.outbox`);
      const problems: string[] = [];
      let seen = 0;
      let duplicated = 0;
      for (const [topic, count] of countBy(rows, (r) => r.topic)) {
        const copies = countBy(await topicEvents(stack, topic, count), (e) => e.messageId);
        const missing = rows.filter((r) => r.topic === topic && !copies.has(r.id)).map((r) => r.id);
        problems.push(...missingProblem(`outbox rows of ${topic} not in Kafka`, missing));
        seen += count - missing.length;
        duplicated += [...copies.values()].reduce((n, c) => n + c - 1, 0);
      }
      if (duplicated > kills * 2 * FAST_BATCH.outbox) problems.push(`${duplicated} events published again, more than two batches per kill`);
      const left = await unpublished();
      if (left > 0) problems.push(`${left} outbox rows never marked published`);
      return { expected: rows.length, seen, duplicated, problems };
    },
  };
}
