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

/** Network errors of a driver or client (they carry no SQLSTATE). */
const NETWORK_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/**
 * pg, pg-pool and ioredis say "the connection is gone" only in words (ioredis: a command on a
 * client that is not connected, with the offline queue off as the service's clients have it; a
 * command on a closed client; a command past its timeout).
 */
const CONNECTION_LOST_TEXT =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed|Stream isn't writeable and enableOfflineQueue options is false|Connection is closed\.|Command timed out)/;
/** ioredis's error for a command that used up its reconnect attempts. */
const REDIS_RETRIES_EXHAUSTED = 'MaxRetriesPerRequestError';

/**
 * The error in the chain that says a connection could not be made or was lost (a network error, or
 * the drivers' words for it), if any: the dependency went away, the request itself was fine.
 */
export function connectionLostIn(err: unknown): Error | undefined {
  for (const e of causeChain(err)) {
    if (!(e instanceof Error)) continue;
    const code = (e as { code?: unknown }).code;
    if ((typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) || CONNECTION_LOST_TEXT.test(e.message) || e.name === REDIS_RETRIES_EXHAUSTED) return e;
  }
  return undefined;
}

/**
 * SQLSTATEs that say the server cannot take the statement now rather than refusing it: class 08
 * (connection exception) except 08P01 (a protocol violation: the client's bug, e.g. a bind with the
 * wrong number of parameters), 57P01–57P03 (shutting down, crashed, not yet accepting connections),
 * 53300 (too many connections).
 */
const isUnavailableState = (state: string) => (state.startsWith('08') && state !== '08P01') || /^57P0[123]$/.test(state) || state === '53300';

/**
 * The error in the chain that says PostgreSQL or Redis (or another dependency whose connection was
 * refused or lost) is unreachable or going away, if any: what a caller should retry after a pause,
 * never the request's own fault.
 */
export function unavailableDependencyIn(err: unknown): Error | undefined {
  const pgErr = pgErrorOf(err);
  if (pgErr && isUnavailableState(pgErr.code)) return pgErr as unknown as Error;
  return connectionLostIn(err);
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
