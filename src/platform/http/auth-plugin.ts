import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { AppError } from './errors.ts';
import { AuthError, extractToken, type Principal } from './auth.ts';
import type { TokenVerifier } from './token-verifier.ts';
import type { UserSlots } from './user-concurrency.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
  interface FastifyInstance {
    /**
     * preHandler: a valid user token is required (401 otherwise); sets request.principal and takes one
     * of the user's slots for requests in progress (429 USER_CONCURRENCY_LIMIT past them, user-concurrency.ts).
     */
    requireUser: preHandlerAsyncHookHandler;
    /** preHandler: a valid token with `admin: true` is required (401 / 403). */
    requireAdmin: preHandlerAsyncHookHandler;
    /** preHandler: a token with an ops role, viewer or operator (401 / 403 AUTH_FORBIDDEN); an admin's checks run as for requireAdmin. */
    requireOpsViewer: preHandlerAsyncHookHandler;
    /** preHandler: a token with the ops operator role (401 / 403 AUTH_FORBIDDEN, 403 OPS_READ_ONLY for a viewer). */
    requireOpsOperator: preHandlerAsyncHookHandler;
    /**
     * preHandler for the media server's callbacks: `Authorization: Bearer <MESSENGER_MEDIA_CALLBACK_SECRET>`
     * (401 otherwise; user and admin tokens are not accepted, and nothing is accepted while it is unset).
     */
    requireMediaCallback: preHandlerAsyncHookHandler;
  }
}

/** Equal in time independent of where they differ; hashing first also hides the expected length. */
export function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * Asked after an admin token is verified; throws an AppError to refuse the admin (e.g. blocked in
 * identity), with a 403 and one of `codes` (listed on every admin route in the API document).
 */
export interface AdminCheck {
  (principal: Principal): Promise<void>;
  readonly codes: readonly string[];
}

export function registerAuth(
  app: FastifyInstance,
  tokens: TokenVerifier,
  opts: { mediaCallbackSecret?: string; adminChecks?: readonly AdminCheck[]; userSlots?: UserSlots } = {},
): void {
  const authenticate = async (req: FastifyRequest): Promise<Principal> => {
    const token = extractToken(req.headers);
    if (!token) throw new AppError('AUTH_REQUIRED', 'a bearer token is required', 401);
    try {
      req.principal = await tokens.verify(token);
    } catch (err) {
      if (err instanceof AuthError) throw new AppError(err.code, err.message, err.statusCode);
      throw err;
    }
    return req.principal;
  };
  app.decorateRequest('principal', undefined);
  app.decorate('requireUser', async (req: FastifyRequest) => {
    const principal = await authenticate(req);
    // Right after the token, before any query the route's other checks or handler make.
    await opts.userSlots?.take(req, principal.userId);
  });
  app.decorate('requireAdmin', async (req: FastifyRequest) => {
    const principal = await authenticate(req);
    if (!principal.admin) throw new AppError('AUTH_FORBIDDEN', 'an admin token is required', 403);
    for (const check of opts.adminChecks ?? []) await check(principal);
  });
  const opsRole = (needed: 'viewer' | 'operator') => async (req: FastifyRequest) => {
    const principal = await authenticate(req);
    if (principal.opsRole === undefined) throw new AppError('AUTH_FORBIDDEN', 'an ops role (an admin token, or the claim ops_role operator or viewer) is required', 403);
    if (needed === 'operator' && principal.opsRole !== 'operator') throw new AppError('OPS_READ_ONLY', 'this token has the read-only ops role: acting needs the operator role', 403);
    // A viewer's token outlives its user's blocking as an admin's does: the same checks for both.
    for (const check of opts.adminChecks ?? []) await check(principal);
  };
  app.decorate('requireOpsViewer', opsRole('viewer'));
  app.decorate('requireOpsOperator', opsRole('operator'));
  const { mediaCallbackSecret } = opts;
  app.decorate('requireMediaCallback', async (req: FastifyRequest) => {
    const given = extractToken(req.headers);
    if (!given) throw new AppError('AUTH_REQUIRED', 'the media callback secret is required as a bearer token', 401);
    if (mediaCallbackSecret === undefined) {
      throw new AppError('AUTH_MEDIA_CALLBACK_DISABLED', 'media callbacks are not configured on this service', 401);
    }
    if (!sameSecret(given, mediaCallbackSecret)) throw new AppError('AUTH_INVALID_CREDENTIAL', 'the media callback secret does not match', 401);
  });
}
