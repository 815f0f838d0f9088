import type { Logger } from '../observability/logger.ts';
import type { GroupIndex, GroupMember } from './groups.ts';
import type { HubMetrics } from './metrics.ts';

/** A group's members as its owner's store has them, and the version every membership change of it bumps. */
export interface GroupMembers {
  version: number;
  userIds: Iterable<string>;
}

/** The owner's answer for a group; undefined when no owner knows it (a versioned send to it is then dropped). */
export type ResolveGroupMembers = (group: string) => Promise<GroupMembers | undefined>;

interface Held {
  event: string;
  payload: unknown;
  version: number;
}

export interface MembershipSyncDeps<C extends GroupMember> {
  index: GroupIndex<C>;
  resolve: ResolveGroupMembers | undefined;
  joinLocal(userId: string, group: string): void;
  leaveLocal(userId: string, group: string): void;
  /** Users with a connection whose groups are still being resolved (not in any group's set yet). */
  joiningUsers(): Iterable<string>;
  deliver(group: string, event: string, payload: unknown): void;
  log: Logger;
  metrics: HubMetrics;
}

/** Reads of a group's members per send that needs one before its frames are dropped. */
const MAX_TRIES = 3;

/**
 * Record-level access checked at delivery, on every replica. Join and leave messages on the
 * backplane are best effort (a replica whose subscriber was away never gets them), so a send to a
 * group whose owner versions its membership (the messenger's chat:{ChatId}: chats.membership_version)
 * carries the version it was sent at. A replica delivers it to its local members only once its
 * view of the group is at least that version; a newer version than it knows makes it read the
 * group's members from the owner first (one read per group and membership change, per replica
 * holding members of the group), holding the group's sends meanwhile so their order is kept. The
 * read's answer replaces the local membership: a removed user's sockets leave, an added user's
 * join. A read that fails drops the held sends (fail closed; clients refill from REST).
 *
 * Chosen over re-resolving every connection after each backplane reconnect and periodically:
 * that leaves a window (until the re-resolve) in which a removed member still receives, and it
 * needs to know the leave was lost; a version on the send closes the window whatever was lost.
 */
export function createMembershipSync<C extends GroupMember>(deps: MembershipSyncDeps<C>) {
  const { index, metrics } = deps;
  /** The version each group's local membership reflects; only groups with local members are kept. */
  const known = new Map<string, number>();
  /** Sends waiting for their group's read, in arrival order. */
  const held = new Map<string, Held[]>();

  const versionOf = (group: string) => known.get(group) ?? Number.NEGATIVE_INFINITY;

  function apply(group: string, members: GroupMembers): void {
    const ids = new Set(members.userIds);
    for (const conn of [...(index.inGroup(group) ?? [])]) if (!ids.has(conn.userId)) deps.leaveLocal(conn.userId, group);
    // A connection still resolving its groups may come back with an older answer: mark the group left.
    for (const userId of deps.joiningUsers()) if (!ids.has(userId)) deps.leaveLocal(userId, group);
    for (const userId of ids) if (index.ofUser(userId)) deps.joinLocal(userId, group);
    known.set(group, Math.max(versionOf(group), members.version));
  }

  async function readUntil(group: string, needed: number): Promise<boolean> {
    for (let tries = 1; tries <= MAX_TRIES; tries++) {
      try {
        const members = deps.resolve ? await deps.resolve(group) : undefined;
        if (!members) throw new Error('no module resolves the members of this group');
        apply(group, members);
        metrics.groupResyncs.inc({ result: 'ok' });
        if (versionOf(group) >= needed) return true;
      } catch (err) {
        metrics.groupResyncs.inc({ result: 'failed' });
        if (tries === MAX_TRIES) deps.log.warn({ err: { message: (err as Error).message }, group }, 'hub: reading group members failed');
      }
    }
    return false;
  }

  async function drain(group: string, queue: Held[]): Promise<void> {
    try {
      while (queue.length > 0) {
        let needed = Number.NEGATIVE_INFINITY;
        for (const h of queue) needed = Math.max(needed, h.version);
        if (versionOf(group) < needed && !(await readUntil(group, needed))) {
          metrics.unverifiedSendsDropped.inc(queue.length);
          deps.log.warn({ group, dropped: queue.length }, 'hub: group sends dropped, their membership could not be confirmed');
          queue.length = 0;
          break;
        }
        // Everything held so far is at or below the version now known; later arrivals wait for the next round.
        for (const h of queue.splice(0, queue.length)) deps.deliver(group, h.event, h.payload);
      }
    } finally {
      held.delete(group);
    }
  }

  return {
    /** Delivers to this replica's members of the group; with a version, only once the local membership is that recent. */
    deliver(group: string, event: string, payload: unknown, version: number | undefined): void {
      if (version === undefined) return deps.deliver(group, event, payload);
      const queue = held.get(group);
      if (queue) {
        queue.push({ event, payload, version });
        return;
      }
      if (!index.inGroup(group)) return; // no local member: nobody to check or to deliver to
      if (versionOf(group) >= version) return deps.deliver(group, event, payload);
      const fresh: Held[] = [{ event, payload, version }];
      held.set(group, fresh);
      void drain(group, fresh);
    },

    /** Forgets versions of groups that have no local member any more (memory follows the open sockets). */
    prune(): void {
      for (const group of known.keys()) if (!index.inGroup(group) && !held.has(group)) known.delete(group);
    },
  };
}
