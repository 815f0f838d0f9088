import type { Logger } from '../observability/logger.ts';
import type { Clock } from '../time.ts';
import type { PresenceChange } from './hub-api.ts';
import type { PresenceStore } from './presence.ts';

/**
 * The hub's side of presence: tells the store when a user's first local connection opens and the
 * last one closes, announces the user's flips (online anywhere / offline everywhere) to listeners,
 * and answers presence with this replica's own sockets first. Store writes are tracked so close()
 * can wait for them; a failed one is logged, never thrown (presence must not break a connection).
 */
export type HubPresence = ReturnType<typeof createHubPresence>;

export function createHubPresence(store: PresenceStore, opts: { log: Logger; clock: Clock; holds: (userId: string) => boolean }) {
  const writes = new Set<Promise<void>>();
  const listeners: ((change: PresenceChange) => void)[] = [];
  const announce = (change: PresenceChange) => {
    for (const listener of listeners) listener(change);
  };
  const track = (what: string, write: Promise<void>) => {
    const p = write.catch((err: Error) => opts.log.warn({ err: { message: err.message } }, `hub presence ${what} failed`));
    writes.add(p);
    void p.finally(() => writes.delete(p));
    return p;
  };

  return {
    /** The user's first connection on this replica opened; resolves once every replica can see it. */
    firstOpened(userId: string): Promise<void> {
      return track('markOnline', store.markOnline(userId).then((cameOnline) => void (cameOnline && announce({ userId, online: true, lastSeenAt: null }))));
    },
    /** The user's last connection on this replica closed. */
    lastClosed(userId: string): void {
      const at = opts.clock.now();
      // Not if the user connected here again meanwhile: that connection's markOnline speaks for it.
      void track('markOffline', store.markOffline(userId, at.getTime()).then((offline) => void (offline && !opts.holds(userId) && announce({ userId, online: false, lastSeenAt: at }))));
    },
    refresh(userIds: readonly string[]): void {
      void track('refresh', store.refresh(userIds));
    },
    async isOnline(userId: string): Promise<boolean> {
      return opts.holds(userId) || (await store.isOnline(userId));
    },
    async presenceOf(userIds: readonly string[]) {
      const stored = await store.status(userIds);
      return userIds.map((userId, i) => {
        const online = opts.holds(userId) || stored[i]!.online;
        const seen = stored[i]!.lastSeenAtMs;
        return { userId, online, lastSeenAt: online || seen === null ? null : new Date(seen) };
      });
    },
    onChange(listener: (change: PresenceChange) => void): void {
      listeners.push(listener);
    },
    /** Waits for the writes under way, then closes the store. */
    async close(): Promise<void> {
      await Promise.all(writes);
      await store.close();
    },
  };
}
