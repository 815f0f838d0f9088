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
  group: string;
  event: string;
  payload: unknown;
  version: number | undefined;
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
 * While any send is held, every later send on this replica queues behind it, whatever its group:
 * frames reach each connection in the order they were sent, so a client that keeps the last
 * event-stream Cursor it received never holds one that skips an earlier frame still on its way.
 * The reads of the groups held together run at once, so the wait is one read, not one per group.
 *
 * Chosen over re-resolving every connection after each backplane reconnect and periodically:
 * that leaves a window (until the re-resolve) in which a removed member still receives, and it
 * needs to know the leave was lost; a version on the send closes the window whatever was lost.
 */
export function createMembershipSync<C extends GroupMember>(deps: MembershipSyncDeps<C>) {
  const { index, metrics } = deps;
  /** The version each group's local membership reflects; only groups with local members are kept. */
  const known = new Map<string, number>();
  /** Sends waiting behind a group's read, in arrival order (empty: nothing is held). */
  const queue: Held[] = [];

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

  const behind = (h: Held) => h.version !== undefined && versionOf(h.group) < h.version && index.inGroup(h.group) !== undefined;

  /** Reads every held group's members (at once), then delivers the queue in order; later arrivals wait for the next round. */
  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const needed = new Map<string, number>();
      for (const h of queue) if (behind(h)) needed.set(h.group, Math.max(needed.get(h.group) ?? Number.NEGATIVE_INFINITY, h.version!));
      const read = await Promise.all([...needed].map(async ([group, version]) => [group, await readUntil(group, version)] as const));
      const failed = new Set(read.filter(([, ok]) => !ok).map(([group]) => group));
      let dropped = 0;
      for (const h of queue.splice(0, queue.length)) {
        if (failed.has(h.group)) dropped++;
        else deps.deliver(h.group, h.event, h.payload);
      }
      if (dropped > 0) {
        metrics.unverifiedSendsDropped.inc(dropped);
        deps.log.warn({ groups: [...failed], dropped }, 'hub: group sends dropped, their membership could not be confirmed');
      }
    }
  }

  return {
    /** Delivers to this replica's members of the group; with a version, only once the local membership is that recent. */
    deliver(group: string, event: string, payload: unknown, version: number | undefined): void {
      const send: Held = { group, event, payload, version };
      if (queue.length > 0) {
        queue.push(send);
        return;
      }
      if (version !== undefined && index.inGroup(group) === undefined) return; // no local member: nobody to check or to deliver to
      if (!behind(send)) return deps.deliver(group, event, payload);
      queue.push(send);
      void drain();
    },

    /** Forgets versions of groups that have no local member any more (memory follows the open sockets). */
    prune(): void {
      for (const group of known.keys()) if (!index.inGroup(group) && !queue.some((h) => h.group === group)) known.delete(group);
    },
  };
}
