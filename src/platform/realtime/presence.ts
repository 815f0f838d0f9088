/**
 * Who is connected, across replicas. The hub always knows its own sockets; a presence store answers
 * for the other replicas. The hub tells the store when a user's first local connection opens and
 * when the last one closes, and re-asserts its users every `refreshIntervalMs`, so entries of a
 * replica that crashed (and never said goodbye) expire on their own. The store also remembers when
 * a user was last seen (their last connection anywhere closed).
 */
import { REALTIME_DEFAULTS } from './defaults.ts';
export interface PresenceStore {
  /** True when no replica held the user before: the user came online. */
  markOnline(userId: string): Promise<boolean>;
  /** True when no replica holds the user any more: the user went offline, last seen at `atMs`. */
  markOffline(userId: string, atMs: number): Promise<boolean>;
  /** Re-asserts the users this replica holds connections for. */
  refresh(userIds: readonly string[]): Promise<void>;
  /** True when some replica holds a connection of the user (the caller checks its own sockets first). */
  isOnline(userId: string): Promise<boolean>;
  /** Per user, in order: held by some replica, and when last seen offline (ms; null if never recorded). */
  status(userIds: readonly string[]): Promise<{ online: boolean; lastSeenAtMs: number | null }[]>;
  /** How often the hub calls refresh; undefined when entries never expire (nothing shared). */
  readonly refreshIntervalMs: number | undefined;
  close(): Promise<void>;
}


/** A single replica: no other replica exists, so nobody else is ever online. */
export function createInProcessPresence(): PresenceStore {
  const lastSeen = new Map<string, number>();
  return {
    markOnline: async () => true,
    markOffline: async (userId, atMs) => {
      lastSeen.delete(userId); // re-inserted last, so the Map's order is oldest first
      lastSeen.set(userId, atMs);
      if (lastSeen.size > REALTIME_DEFAULTS.hubUsersKept) lastSeen.delete(lastSeen.keys().next().value!);
      return true;
    },
    refresh: async () => {},
    isOnline: async () => false,
    status: async (userIds) => userIds.map((id) => ({ online: false, lastSeenAtMs: lastSeen.get(id) ?? null })),
    refreshIntervalMs: undefined,
    close: async () => {},
  };
}
