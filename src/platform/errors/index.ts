import pg from 'pg';

/**
 * Errors as the kernel reads them: one way to find the PostgreSQL error behind a wrapped one (drizzle
 * wraps driver errors in an error whose message is the whole query text), and one short text of an
 * error for logs and stored `last_error` columns.
 */

/** The fields of a PostgreSQL error (pg's DatabaseError) the code branches on. */
export interface PgErrorFields {
  /** SQLSTATE, e.g. '23505'. */
  code: string;
  constraint?: string;
  severity?: string;
}

/** The causes of `err`, outermost first (`cause`, or kafkajs's `originalError`), at most 8 deep. */
export function* causeChain(err: unknown): Generator<unknown> {
  const seen = new Set<unknown>();
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && !seen.has(e) && depth < 8; depth++) {
    seen.add(e);
    yield e;
    e = (e as { cause?: unknown }).cause ?? (e as { originalError?: unknown }).originalError;
  }
}

/** The first PostgreSQL error in the cause chain (pg's DatabaseError, or an error carrying its SQLSTATE and severity), if any. */
export function pgErrorOf(err: unknown): PgErrorFields | undefined {
  for (const e of causeChain(err)) {
    const fields = e as { code?: unknown; severity?: unknown };
    if (typeof fields.code !== 'string') continue;
    if (e instanceof pg.DatabaseError || (/^[0-9A-Z]{5}$/.test(fields.code) && fields.severity !== undefined)) return e as PgErrorFields;
  }
  return undefined;
}

/** True when the PostgreSQL error behind `err` has SQLSTATE `code` (and, if given, names `constraint`). */
export function isPgError(err: unknown, code: string, constraint?: string): boolean {
  const pgErr = pgErrorOf(err);
  return pgErr !== undefined && pgErr.code === code && (constraint === undefined || pgErr.constraint === constraint);
}

/** The innermost cause: the driver's or the network's own error. */
export function rootCause(err: unknown): unknown {
  let last: unknown = err;
  for (const e of causeChain(err)) last = e;
  return last;
}

/** An error's message, or the value as text. */
export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** "Name: message" of the innermost cause, cut to `max` characters: safe for logs and last_error columns. */
export function errorText(err: unknown, max = 500): string {
  const root = rootCause(err);
  const text = root instanceof Error ? `${root.name}: ${root.message}` : String(root);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * A row's failure that its job has already logged in the seed's own words: a batch worker counts it
 * (failed, excluded from the rest of the run) without an 'item failed' line of its own.
 */
export class ReportedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ReportedError';
  }
}
