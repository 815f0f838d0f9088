import { sql, type SQL } from 'drizzle-orm';

/**
 * What the claim statement reads beside its rows for a kinds' owner, declared as data in its
 * registration (port.ts): which of its tables a row's reference points at and which columns to read
 * there, which table holds a chat group's membership version, and which of its kinds take their
 * stream slots in Seq order. Push writes the SQL itself from these names (checked here: names only,
 * never text of the owner's), so a module hands the kernel no statement, and any number of owners may
 * declare reads: each owner's joins apply to its own kinds' rows only.
 */
export interface ClaimReads {
  /** A row of the owner's table read beside each claimed row of its kinds whose reference names it. */
  beside?: BesideRead;
  /**
   * The membership version of a ChatGroup row's group (its chatId) as the claim reads it: stored with
   * its stream event and carried by its sends, so every replica delivers only to members as of it.
   */
  groupVersion?: { table: string; column: string };
  /** Kinds whose rows of one chat take their stream slots in Seq order (a send's id is drawn before its chat lock). */
  seqOrdered?: readonly string[];
}

export interface BesideRead {
  /** The claimed row's field it lands in: the read row, or null when the referenced row is gone. */
  as: string;
  /** The owner's table, `schema.table`; matched by its `id` column. */
  table: string;
  /** The claimed row's reference that names the table's id. */
  by: 'messageId' | 'refId' | 'chatId';
  /** Each field of the read row → its column, optionally cast (`seq::float8`); `id` among them. */
  columns: Readonly<Record<string, string>>;
}

/** One owner's reads with the kinds they apply to. */
export interface OwnerClaimReads {
  kinds: readonly string[];
  reads: ClaimReads;
}

const TABLE = /^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$/;
const COLUMN = /^[a-z_][a-z0-9_]*(::[a-z0-9]+)?$/;
const FIELD = /^[A-Za-z][A-Za-z0-9]*$/;
const KIND = /^[A-Z][A-Za-z]{0,31}$/;
const REF_COLUMN = { messageId: '"messageId"', refId: '"refId"', chatId: '"chatId"' } as const;

/** What is wrong with an owner's declared reads (names that are not names, a Seq kind it does not own); [] when none. */
export function claimReadsProblems(owner: string, kinds: readonly string[], r: ClaimReads): string[] {
  const problems = kinds.filter((k) => !KIND.test(k)).map((k) => `${owner}: push kind ${JSON.stringify(k)} is not a kind name`);
  for (const k of r.seqOrdered ?? []) if (!kinds.includes(k)) problems.push(`${owner} orders push kind ${JSON.stringify(k)} by Seq, a kind it does not register`);
  if (r.beside) {
    const b = r.beside;
    if (!FIELD.test(b.as)) problems.push(`${owner}: claim read field ${JSON.stringify(b.as)} is not a name`);
    if (!TABLE.test(b.table)) problems.push(`${owner}: claim read table ${JSON.stringify(b.table)} is not schema.table`);
    if (!(b.by in REF_COLUMN)) problems.push(`${owner}: claim read by ${JSON.stringify(b.by)} is not a reference of a push row`);
    if (!('id' in b.columns)) problems.push(`${owner}: claim read of ${b.table} reads no id`);
    for (const [field, column] of Object.entries(b.columns)) {
      if (!FIELD.test(field) || !COLUMN.test(column)) problems.push(`${owner}: claim read column ${JSON.stringify(field)}: ${JSON.stringify(column)} is not a name`);
    }
  }
  if (r.groupVersion && (!TABLE.test(r.groupVersion.table) || !COLUMN.test(r.groupVersion.column))) {
    problems.push(`${owner}: group version ${JSON.stringify(r.groupVersion)} is not schema.table and a column`);
  }
  return problems;
}

/** The statement's parts for every owner's reads, over the claimed rows aliased `c`. */
export interface ClaimReadsSql {
  /** Columns read beside each claimed row, beginning with `, ` (or empty). */
  columns: SQL;
  /** The outer joins those columns come from. */
  joins: SQL;
  /** The outer joins the group version comes from. */
  groupJoins: SQL;
  /** The group's membership version of a ChatGroup row (null for the others and with no owner's declaration). */
  groupVersion: SQL;
  /** Whether a row takes its slot in Seq order. */
  bySeq: SQL;
  /** Folds what `columns` read beside a row into the row. */
  take<T extends object>(raw: T): T;
}

const kindIn = (kinds: readonly string[]): string => (kinds.length === 0 ? 'false' : `c.kind in (${kinds.map((k) => `'${k}'`).join(', ')})`);
const cast = (alias: string, column: string): string => {
  const [name, type] = column.split('::');
  return type ? `${alias}."${name}"::${type}` : `${alias}."${name}"`;
};

/** Writes the SQL of the declared reads; throws on a declaration that is not names (a programming error). */
export function claimReadsSql(owners: readonly OwnerClaimReads[]): ClaimReadsSql {
  const problems = owners.flatMap((o, i) => claimReadsProblems(`claim reads #${i}`, o.kinds, o.reads));
  if (problems.length > 0) throw new Error(`invalid push claim reads: ${problems.join('; ')}`);
  const columns: string[] = [];
  const joins: string[] = [];
  const groupJoins: string[] = [];
  const versions: string[] = [];
  const seqKinds = owners.flatMap((o) => o.reads.seqOrdered ?? []);
  owners.forEach(({ kinds, reads }, i) => {
    if (reads.beside) {
      const b = reads.beside;
      const alias = `b${i}`;
      for (const [field, column] of Object.entries(b.columns)) columns.push(`, ${cast(alias, column)} as "${b.as}.${field}"`);
      joins.push(`left join ${b.table} ${alias} on ${alias}.id = c.${REF_COLUMN[b.by]} and ${kindIn(kinds)}`);
    }
    if (reads.groupVersion) {
      const alias = `g${i}`;
      groupJoins.push(`left join ${reads.groupVersion.table} ${alias} on ${alias}.id = c."chatId" and c."targetKind" = 'ChatGroup' and ${kindIn(kinds)}`);
      versions.push(cast(alias, reads.groupVersion.column));
    }
  });
  const besides = owners.filter((o) => o.reads.beside).map((o) => ({ kinds: new Set(o.kinds), ...o.reads.beside! }));
  return {
    columns: sql.raw(columns.join('')),
    joins: sql.raw(joins.join('\n       ')),
    groupJoins: sql.raw(groupJoins.join('\n       ')),
    groupVersion: sql.raw(versions.length === 0 ? 'null::int' : versions.length === 1 ? versions[0]! : `coalesce(${versions.join(', ')})`),
    bySeq: sql.raw(`${kindIn(seqKinds)} and c."chatId" is not null and c.seq is not null`),
    take(raw) {
      if (besides.length === 0) return raw;
      const row: Record<string, unknown> = {};
      const read = new Map<string, Record<string, unknown>>();
      for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
        const dot = key.indexOf('.');
        if (dot < 0) row[key] = value;
        else (read.get(key.slice(0, dot)) ?? read.set(key.slice(0, dot), {}).get(key.slice(0, dot))!)[key.slice(dot + 1)] = value;
      }
      for (const b of besides) {
        // Only a row of the owner's kinds that names a reference carries the field (null: the referenced row is gone).
        if (!b.kinds.has(row.kind as string) || row[b.by] === null || row[b.by] === undefined) continue;
        const r = read.get(b.as)!;
        row[b.as] = r.id === null ? null : r;
      }
      return row as unknown as typeof raw;
    },
  };
}
