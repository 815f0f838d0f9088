import { AppError } from '../../platform/http/index.ts';

/** Stable error codes of the user-activity API. */
export const ERROR = {
  sessionNotFound: 'USER_ACTIVITY_SESSION_NOT_FOUND',
  viewNotFound: 'USER_ACTIVITY_PROPERTY_OBJECT_VIEW_NOT_FOUND',
  filterSnapshotTooLarge: 'USER_ACTIVITY_FILTER_SNAPSHOT_TOO_LARGE',
} as const;

export const sessionNotFound = (message = 'no active session with this id') => new AppError(ERROR.sessionNotFound, message, 404);

/**
 * What of an error may be logged. PostgreSQL puts row values in `detail` ("Failing row contains …",
 * which would carry AnonymousId and IP), so only the message, code and constraint are kept.
 */
export function errorSummary(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { message: String(err).slice(0, 300) };
  const pgErr = err as Error & { code?: string; constraint?: string; table?: string };
  return {
    name: err.name,
    message: err.message.slice(0, 300),
    ...(pgErr.code ? { code: pgErr.code } : {}),
    ...(pgErr.constraint ? { constraint: pgErr.constraint } : {}),
    ...(pgErr.table ? { table: pgErr.table } : {}),
  };
}
