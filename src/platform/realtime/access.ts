import type { Logger } from '../observability/logger.ts';
import type { RefusalReason } from './metrics.ts';
import { fullBucket, takeToken } from './rate-buckets.ts';
import { tickBatcher } from './tick-batch.ts';

/**
 * Who may hold hub connections. resolveGroups throws a HubRefusal to refuse a connection (the
 * client's start() rejects with its reason); caps bound the sockets one user and one replica hold;
 * a periodic recheck closes connections of users who lost access when the backplane message that
 * should have closed them was lost.
 */

/** Thrown by resolveGroups: the connection is refused with this reason as its handshake error. */
export class HubRefusal extends Error {
  override readonly name = 'HubRefusal';
}

/**
 * Which of the connected users lost access, and the close reason they get. Negotiate and connect
 * ask it too: a user it names is refused there with 403 `{ code, message: reason }`.
 */
export interface HubAccess {
  revoked(userIds: readonly string[]): Promise<Iterable<string>>;
  reason: string;
  /** The stable code of that 403 (e.g. MSG_USER_INACTIVE); HUB_ACCESS_REVOKED when not given. */
  code?: string;
}

/** Judged at the upgrade, before the socket's handshake request: what the replica and the user hold waiting. */
export interface UpgradeAdmission {
  /** The user's sockets on this replica still waiting for their handshake request (handshake.ts). */
  waitingOfUser: number;
  /** Sockets this replica holds: connections and sockets waiting for their handshake request. */
  onReplica: number;
  maxPerUser: number | undefined;
  maxOnReplica: number | undefined;
}

/**
 * The replica's cap counts every socket it holds. A socket still waiting for its handshake holds no
 * place in its user's connection cap (a stuck one must not lock its user out), so those are bounded
 * per user on their own, by the same number: one user cannot fill a replica with silent sockets.
 */
export function upgradeRefusal(a: UpgradeAdmission): { reason: RefusalReason; error: string } | undefined {
  if (a.maxOnReplica !== undefined && a.onReplica >= a.maxOnReplica) {
    return { reason: 'replica_limit', error: `Too many connections: this server holds its maximum of ${a.maxOnReplica}; try again later.` };
  }
  if (a.maxPerUser !== undefined && a.waitingOfUser >= a.maxPerUser) {
    return {
      reason: 'handshake_limit',
      error: `Too many connections: a user may have at most ${a.maxPerUser} handshakes in progress on this server; try again later.`,
    };
  }
  return undefined;
}

/** Judged at the socket's valid handshake request: `ofUser` counts the user's connections past that point. */
export function connectionRefusal(a: { ofUser: number; maxPerUser: number | undefined }): { reason: RefusalReason; error: string } | undefined {
  if (a.maxPerUser !== undefined && a.ofUser >= a.maxPerUser) {
    return { reason: 'user_limit', error: `Too many connections: a user may hold at most ${a.maxPerUser} on this server; close another one first.` };
  }
  return undefined;
}

/**
 * `(check, userId) => revoked?` for negotiate and connect: each check is asked once per event-loop
 * turn for every connect of that turn (a reconnect storm's connects share one query), and never
 * answered from an earlier read (tick-batch.ts).
 */
export function revokedLookup(): (check: HubAccess, userId: string) => Promise<boolean> {
  const byCheck = new WeakMap<HubAccess, (userId: string) => Promise<boolean>>();
  return (check, userId) => {
    let ask = byCheck.get(check);
    if (!ask) {
      ask = tickBatcher(
        async (userIds: string[]) => {
          const revoked = new Set(await check.revoked(userIds));
          return new Map(userIds.map((id) => [id, revoked.has(id)]));
        },
        { missing: false },
      );
      byCheck.set(check, ask);
    }
    return ask(userId);
  };
}

/** Every `intervalMs`, asks each check about the connected users and closes the revoked ones with its reason. Returns the timer. */
export function startAccessRecheck(
  access: { checks: readonly HubAccess[]; intervalMs: number },
  users: () => string[],
  close: (userId: string, reason: string) => void,
  log: Logger,
): NodeJS.Timeout {
  const timer = setInterval(() => {
    const connected = users();
    if (connected.length === 0) return;
    for (const check of access.checks) {
      check.revoked(connected).then(
        (revoked) => {
          for (const userId of revoked) close(userId, check.reason);
        },
        (err: Error) => log.warn({ err: { message: err.message } }, 'hub: access recheck failed'),
      );
    }
  }, access.intervalMs);
  timer.unref();
  return timer;
}

/**
 * New connections a replica admits per second (HUB_MAX_CONNECTS_PER_SECOND): a token bucket holding
 * one second's worth, so a deploy's reconnect storm is spread over seconds instead of taking every
 * replica's CPU at once. `take` answers undefined when admitted, else the seconds until a place frees.
 */
export function createConnectRate(perSecond: number, nowMs: () => number): { take(): number | undefined } {
  const rate = { perSecond, burst: perSecond };
  const bucket = fullBucket(rate, nowMs());
  return { take: () => takeToken(bucket, rate, nowMs()) };
}
