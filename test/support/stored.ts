import type pg from 'pg';

/**
 * Every application table's content as one md5 each: what "stored" means to a test of a refusal.
 * The admin audit's record of a refusal or failure (platform.ops_audit, status refused / failed) is
 * left out: writing it is what refusing an admin route does (src/platform/http/admin-audit.ts).
 */
export async function storedDigests(pool: pg.Pool): Promise<Map<string, string>> {
  const tables = await pool.query<{ name: string }>(
    `select format('%I.%I', table_schema, table_name) as name from information_schema.tables
      where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema') order by 1`,
  );
  const rowsOf = (name: string) => (name === 'platform.ops_audit' ? `(select * from ${name} where status not in ('refused', 'failed'))` : name);
  const parts = tables.rows.map((t) => `select '${t.name}' as name, md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as digest from ${rowsOf(t.name)} x`);
  const { rows } = await pool.query<{ name: string; digest: string }>(parts.join(' union all '));
  return new Map(rows.map((r) => [r.name, r.digest]));
}

/** The tables whose content differs between two digests. */
export function changedTables(before: Map<string, string>, after: Map<string, string>): string[] {
  return [...after].filter(([table, digest]) => before.get(table) !== digest).map(([table]) => table);
}
