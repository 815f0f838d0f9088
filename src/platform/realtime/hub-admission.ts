import { AuthError, type Principal } from '../http/auth.ts';
import type { TokenVerifier } from '../http/token-verifier.ts';
import { newId, type Clock } from '../time.ts';
import { createConnectRate, revokedLookup, type HubAccess } from './access.ts';
import { monotonicMs } from './connection.ts';
import { signConnectionToken, verifyConnectionToken } from './connection-token.ts';
import type { AuthResult, ConnectRefusal } from './hub-api.ts';
import type { HubMetrics } from './metrics.ts';
import { negotiateReply, type NegotiateReply } from './protocol.ts';
import { createKeyedBuckets, type BucketRate } from './rate-buckets.ts';
import { REALTIME_DEFAULTS } from './defaults.ts';

/**
 * Who may open a socket, judged before the upgrade (plugin.ts answers a refusal as plain HTTP):
 * the bearer token and the access checks (negotiate and connect), the connect rate, and the
 * negotiate's connection token, which opens one socket, once (docs/security.md, "Hub connection
 * tokens").
 */
export interface AdmissionOptions {
  /** Keys the connection tokens (connection-token.ts). */
  secret: string;
  tokens: TokenVerifier;
  /** Business clock for connection-token expiry. */
  clock: Clock;
  connectionTokenTtlMs: number;
  /** HUB_MAX_CONNECTS_PER_SECOND; undefined: no rate. */
  maxConnectsPerSecond: number | undefined;
  /** Each user's share, taken before the replica's rate (REALTIME_DEFAULTS.hubUserConnectsPerSecond); undefined: none. */
  userConnectShare: BucketRate | undefined;
  /** Its checks are read at every connect (the list may grow after the hub is created). */
  access: { checks: readonly HubAccess[] } | undefined;
  metrics: HubMetrics;
  /** Whether a connection with this id is open on this replica. */
  isOpen(connectionId: string): boolean;
}

export type Admission = ReturnType<typeof createAdmission>;

export function createAdmission(o: AdmissionOptions) {
  const { secret, tokens, clock, access, metrics } = o;
  // Admission is timed on the monotonic clock: it is about real elapsed time, not business time.
  const connectRate = o.maxConnectsPerSecond === undefined ? undefined : createConnectRate(o.maxConnectsPerSecond, monotonicMs);
  const userShares = o.userConnectShare === undefined ? undefined : createKeyedBuckets(o.userConnectShare, REALTIME_DEFAULTS.hubUsersKept, monotonicMs);
  const isRevoked = revokedLookup();
  /**
   * Connection ids whose token was admitted, until the token expires. Taken at admission, before the
   * upgrade completes: two upgrades racing with one token cannot both pass, and a token opens one
   * socket once (ASP.NET Core's tokens are single-use), not one at a time.
   */
  const usedTokens = new Map<string, number>();

  return {
    /** Verifies the token, then asks the access checks: a user one of them revoked gets its 403. */
    async authenticate(token: string | undefined): Promise<AuthResult> {
      if (!token) {
        metrics.authFailures.inc();
        return { ok: false, code: 'AUTH_REQUIRED', message: 'a bearer token is required', statusCode: 401 };
      }
      let principal: Principal;
      try {
        principal = await tokens.verify(token);
      } catch (err) {
        metrics.authFailures.inc();
        if (err instanceof AuthError) return { ok: false, code: err.code, message: err.message, statusCode: err.statusCode };
        throw err;
      }
      for (const check of access?.checks ?? []) {
        if (await isRevoked(check, principal.userId)) {
          metrics.refused.inc({ reason: 'forbidden' });
          return { ok: false, code: check.code ?? 'HUB_ACCESS_REVOKED', message: check.reason, statusCode: 403 };
        }
      }
      return { ok: true, principal };
    },

    negotiate(principal: Principal, version: 0 | 1): NegotiateReply {
      const connectionId = newId();
      const expiresAt = clock.now().getTime() + o.connectionTokenTtlMs;
      const token = signConnectionToken({ connectionId, userId: principal.userId, expiresAt }, secret);
      return negotiateReply(version, connectionId, token);
    },

    /**
     * A place in the connect budgets: the user's own share first, so a user past it is refused
     * without draining the replica's rate that every other user shares; undefined when admitted.
     */
    admitConnect(userId: string): ConnectRefusal | undefined {
      const userWait = userShares?.take(userId);
      if (userWait !== undefined) {
        metrics.refused.inc({ reason: 'user_rate' });
        return { statusCode: 429, retryAfterSeconds: userWait };
      }
      const retryAfterSeconds = connectRate?.take();
      if (retryAfterSeconds === undefined) return undefined;
      metrics.refused.inc({ reason: 'rate' });
      return { statusCode: 503, retryAfterSeconds };
    },

    /** The id from a genuine, unexpired, unused token of this user (taken now), or fresh without one. */
    connectionIdFor(principal: Principal, connectionToken: string | undefined): string | undefined {
      if (connectionToken === undefined) return newId();
      const ticket = verifyConnectionToken(connectionToken, secret, principal.userId, clock.now().getTime());
      if (!ticket || usedTokens.has(ticket.connectionId) || o.isOpen(ticket.connectionId)) return undefined;
      usedTokens.set(ticket.connectionId, ticket.expiresAt);
      return ticket.connectionId;
    },

    /** Forgets the used tokens that expired (they no longer open anything); the liveness tick calls it. */
    forgetExpiredTokens(): void {
      const clockNow = clock.now().getTime();
      for (const [connectionId, expiresAt] of usedTokens) if (expiresAt <= clockNow) usedTokens.delete(connectionId);
    },
  };
}
