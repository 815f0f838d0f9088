import type pg from 'pg';

/** The statements `pool` runs while `during` runs whose text matches `match` (the database still runs them all). */
export async function statementsMatching(pool: pg.Pool, match: RegExp, during: () => Promise<unknown>): Promise<number> {
  const original = pool.query;
  let n = 0;
  pool.query = ((...args: unknown[]) => {
    const first = args[0] as string | { text?: string };
    const text = typeof first === 'string' ? first : (first?.text ?? '');
    if (match.test(text)) n++;
    return (original as (...a: unknown[]) => unknown).apply(pool, args);
  }) as typeof pool.query;
  try {
    await during();
  } finally {
    pool.query = original;
  }
  return n;
}
