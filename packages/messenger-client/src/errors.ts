import { retryAfterMsOf } from './backoff.ts';

/**
 * Every failure the client reports is a MessengerError: the server's stable `code` and `message`
 * (its `{ code, message }` body), the HTTP `status` (0 when no answer came: the network, a timeout),
 * and `retryAfterMs` when the server named a Retry-After. `retryable` says whether the same call may
 * succeed later without the app changing anything.
 */
export class MessengerError extends Error {
  override readonly name = 'MessengerError';
  readonly code: string;
  readonly status: number;
  readonly retryAfterMs: number | undefined;

  constructor(code: string, message: string, status: number, retryAfterMs?: number) {
    super(message);
    this.code = code;
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }

  /** No answer, a timeout, 408, 429 or 5xx: worth trying again (after retryAfterMs when given). */
  get retryable(): boolean {
    return this.status === 0 || this.status === 408 || this.status === 429 || this.status >= 500;
  }
}

/**
 * Thrown (or rejected with) by the app's `getToken` when it cannot get a token any more (the user
 * signed out, the refresh token was revoked): the client stops for good instead of retrying, as
 * centrifuge-js does with its UnauthorizedError.
 */
export class UnauthorizedError extends Error {
  override readonly name = 'UnauthorizedError';
}

/** The service could not be reached (DNS, refused connection, offline), or gave no answer in time. */
export const NETWORK_ERROR = 'NETWORK_ERROR';
/** The object store refused a file's bytes (its presigned URL expired, or the PUT was not the one signed): upload again. */
export const FILE_UPLOAD_REFUSED = 'FILE_UPLOAD_REFUSED';
/** An open connection was closed (the network, a server restart, the token's expiry): the client reconnects. */
export const CONNECTION_LOST = 'CONNECTION_LOST';
/** `getToken` threw UnauthorizedError, returned no token, or returned the token just refused. */
export const TOKEN_UNAVAILABLE = 'TOKEN_UNAVAILABLE';
/** `getToken` failed some other way (its own backend unreachable): retried with the backoff. */
export const TOKEN_REFRESH_FAILED = 'TOKEN_REFRESH_FAILED';

/** The error a non-2xx answer stands for, from its `{ code, message }` body and Retry-After. */
export async function errorOfResponse(res: Response): Promise<MessengerError> {
  const body = (await res.json().catch(() => ({}))) as { code?: unknown; message?: unknown };
  const retryAfter = retryAfterMsOf(res.headers.get('retry-after'));
  return new MessengerError(
    typeof body.code === 'string' ? body.code : `HTTP_${res.status}`,
    typeof body.message === 'string' ? body.message : res.statusText || `HTTP ${res.status}`,
    res.status,
    retryAfter > 0 ? retryAfter : undefined,
  );
}

/** A fetch that threw (no answer) as a MessengerError; one already typed passes through. */
export function errorOfThrown(err: unknown): MessengerError {
  if (err instanceof MessengerError) return err;
  const timeout = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
  return new MessengerError(NETWORK_ERROR, timeout ? 'the service did not answer in time' : `the service could not be reached: ${String((err as Error)?.message ?? err)}`, 0);
}

/** A hub method's refusal: the server's "CODE: message" (HubRefusal) with a status as REST would answer it. */
const HUB_REFUSAL = /^([A-Z][A-Z0-9_]{2,}): ([\s\S]*)$/;
/** The server failed a hub method without saying why (ASP.NET Core's generic text): may work on a retry. */
export const HUB_METHOD_FAILED = 'HUB_METHOD_FAILED';

/**
 * What an invoke() of a hub method rejected with, as a MessengerError: a coded refusal keeps its
 * code (a *_NOT_FOUND as 404, any other as 400: not retryable), the server's unexplained failure is
 * HUB_METHOD_FAILED (500), and a connection that went away under the call CONNECTION_LOST (0).
 */
export function errorOfHubCall(err: unknown): MessengerError {
  if (err instanceof MessengerError) return err;
  const text = String((err as Error)?.message ?? err);
  const coded = HUB_REFUSAL.exec(text);
  if (coded) return new MessengerError(coded[1]!, coded[2]!, coded[1]!.endsWith('_NOT_FOUND') ? 404 : 400);
  if (/on the server/.test(text)) return new MessengerError(HUB_METHOD_FAILED, text, 500);
  return new MessengerError(CONNECTION_LOST, text, 0);
}
