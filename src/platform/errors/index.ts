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

export interface ErrorTextOptions {
  /** The longest text; a cut ends in "…". Default 500. */
  max?: number;
  /** Describe the innermost cause (the driver's or the network's own error) rather than the error itself. Default true. */
  root?: boolean;
  /** Keep the error's own code: "Name[code]: message". */
  code?: boolean;
  /** Start with the error's name. Default true; false gives the bare message. */
  name?: boolean;
}

/**
 * The one error-to-text helper: "Name: message" of the innermost cause (or of the error itself),
 * cut to `max` characters; for log fields, last_error columns and error messages built from another.
 */
export function errorText(err: unknown, opts: ErrorTextOptions = {}): string {
  const { max = 500, root = true, code = false, name = true } = opts;
  const e = root ? rootCause(err) : err;
  let text = String(e);
  if (e instanceof Error) {
    const c = (e as { code?: unknown }).code;
    const head = code && (typeof c === 'string' || typeof c === 'number') ? `${e.name}[${c}]` : e.name;
    text = name ? `${head}: ${e.message}` : e.message;
  }
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
