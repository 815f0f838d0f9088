/**
 * The backplane carries what one replica must tell the others: group sends (with the membership
 * version they were sent at, for groups whose owner versions them: membership.ts), group
 * membership changes, and users whose connections must close (access revoked). Every replica
 * delivers to its own sockets; a replica ignores messages it published itself (it has already
 * applied them locally). Two adapters: in-process (a single replica; nothing to carry) and Redis
 * pub/sub (backplane-redis.ts).
 */

export type BackplaneMessage =
  | { kind: 'send'; origin: string; group: string; event: string; payload: unknown; version?: number }
  | { kind: 'join' | 'leave'; origin: string; userId: string; group: string }
  | { kind: 'disconnect'; origin: string; userId: string; reason: string };

export type BackplaneStatus = 'ok' | 'down' | 'disabled';

export interface Backplane {
  /** Resolves once the message is handed to the transport; rejects when it cannot be (e.g. Redis down). */
  publish(message: BackplaneMessage): Promise<void>;
  /** Registers the one receiver of messages from other replicas (the hub). */
  onMessage(handler: (message: BackplaneMessage) => void): void;
  /** For /health/ready: 'disabled' when there is no shared transport. */
  health(): Promise<BackplaneStatus>;
  close(): Promise<void>;
}

/** A single replica: there is nobody to tell, so publishing is a no-op that always succeeds. */
export function createInProcessBackplane(): Backplane {
  return {
    publish: async () => {},
    onMessage: () => {},
    health: async () => 'disabled',
    close: async () => {},
  };
}

export const encodeBackplaneMessage = (message: BackplaneMessage): string => JSON.stringify(message);

/** Reads a message from the wire; undefined for anything malformed (never thrown at the subscriber). */
export function decodeBackplaneMessage(raw: string): BackplaneMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const m = value as Record<string, unknown>;
  if (typeof m.origin !== 'string') return undefined;
  if (m.kind === 'disconnect' && typeof m.userId === 'string' && typeof m.reason === 'string') {
    return { kind: 'disconnect', origin: m.origin, userId: m.userId, reason: m.reason };
  }
  if (typeof m.group !== 'string') return undefined;
  if (m.kind === 'send' && typeof m.event === 'string') {
    if (m.version !== undefined && !Number.isSafeInteger(m.version)) return undefined;
    const version = m.version as number | undefined;
    return { kind: 'send', origin: m.origin, group: m.group, event: m.event, payload: m.payload, ...(version === undefined ? {} : { version }) };
  }
  if ((m.kind === 'join' || m.kind === 'leave') && typeof m.userId === 'string') {
    return { kind: m.kind, origin: m.origin, userId: m.userId, group: m.group };
  }
  return undefined;
}
