/**
 * Who is connected, across replicas. The hub always knows its own sockets; a presence store answers
 * for the other replicas. The hub tells the store when a user's first local connection opens and
 * when the last one closes, and re-asserts its users every `refreshIntervalMs`, so entries of a
 * replica that crashed (and never said goodbye) expire on their own.
 */
export interface PresenceStore {
  markOnline(userId: string): Promise<void>;
  markOffline(userId: string): Promise<void>;
  /** Re-asserts the users this replica holds connections for. */
  refresh(userIds: readonly string[]): Promise<void>;
  /** True when some replica holds a connection of the user (the caller checks its own sockets first). */
  isOnline(userId: string): Promise<boolean>;
  /** How often the hub calls refresh; undefined when entries never expire (nothing shared). */
  readonly refreshIntervalMs: number | undefined;
  close(): Promise<void>;
}

/** A single replica: no other replica exists, so nobody else is ever online. */
export function createInProcessPresence(): PresenceStore {
  return {
    markOnline: async () => {},
    markOffline: async () => {},
    refresh: async () => {},
    isOnline: async () => false,
    refreshIntervalMs: undefined,
    close: async () => {},
  };
}
