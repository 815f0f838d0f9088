import type { Logger } from '../observability/logger.ts';
import type { Backplane, BackplaneMessage } from './backplane.ts';
import type { HubConnection } from './connection.ts';
import type { GroupIndex } from './groups.ts';
import { createMembershipSync, type ResolveGroupMembers } from './membership.ts';
import { FrameTally, type HubMetrics } from './metrics.ts';
import { encodeMsgpackInvocation } from './msgpack-protocol.ts';
import { encodeInvocation } from './protocol.ts';

/**
 * Group delivery: a send, join, leave or disconnect is applied to this replica's sockets and
 * published on the backplane for the others; what other replicas publish is applied here on
 * receipt. Sends to versioned groups pass membership.ts first. A group's frame is encoded once per
 * protocol its members speak, and the frames a burst queues go out in one socket write per
 * connection, once the burst is done.
 */
export interface GroupDeliveryDeps {
  index: GroupIndex<HubConnection>;
  /** Connections whose groups are still being resolved, with the groups they left meanwhile (hub-connections.ts). */
  joining: Map<HubConnection, Set<string>>;
  backplane: Backplane;
  replicaId: string;
  resolveGroupMembers: ResolveGroupMembers | undefined;
  log: Logger;
  metrics: HubMetrics;
}

export type GroupDelivery = ReturnType<typeof createGroupDelivery>;

export function createGroupDelivery(deps: GroupDeliveryDeps) {
  const { index, joining, backplane, replicaId, log, metrics } = deps;

  const deliverNow = (group: string, event: string, payload: unknown) => {
    const members = index.inGroup(group);
    if (!members) return;
    // Encoded once per protocol its members speak, not once per connection.
    let json: Buffer | undefined;
    let msgpack: Buffer | undefined;
    // A send may close a slow consumer; deleting from a Set while iterating it is safe.
    for (const conn of members) {
      const frame = conn.format.binary
        ? (msgpack ??= encodeMsgpackInvocation(event, payload))
        : (json ??= Buffer.from(encodeInvocation(event, payload)));
      conn.send(frame, 'invocation');
    }
  };

  const joinLocal = (userId: string, group: string) => {
    for (const conn of index.ofUser(userId) ?? []) {
      index.join(conn, group);
      joining.get(conn)?.delete(group);
    }
  };

  const leaveLocal = (userId: string, group: string) => {
    for (const conn of index.ofUser(userId) ?? []) {
      index.leave(conn, group);
      joining.get(conn)?.add(group);
    }
  };

  const membership = createMembershipSync({
    index,
    resolve: deps.resolveGroupMembers,
    joinLocal,
    leaveLocal,
    joiningUsers: () => [...joining.keys()].map((c) => c.userId),
    deliver: deliverNow,
    log,
    metrics,
  });

  const disconnectLocal = (userId: string, reason: string) => {
    for (const conn of [...(index.ofUser(userId) ?? [])]) conn.close('access_revoked', reason, false, 'graceful');
  };

  backplane.onMessage((message: BackplaneMessage) => {
    if (message.origin === replicaId) return; // already applied when it was published
    if (message.kind === 'send') membership.deliver(message.group, message.event, message.payload, message.version);
    else if (message.kind === 'disconnect') disconnectLocal(message.userId, message.reason);
    else if (message.kind === 'join') joinLocal(message.userId, message.group);
    else leaveLocal(message.userId, message.group);
  });

  // Connections with queued frames, flushed together once the current burst of sends (e.g. a
  // dispatcher batch, which pushes without yielding to I/O) is done: one socket write each.
  let toFlush: HubConnection[] = [];
  const flushQueued = () => {
    const conns = toFlush;
    toFlush = [];
    const sent = new FrameTally();
    for (const conn of conns) conn.flush(sent);
    sent.countInto(metrics);
  };

  return {
    /** Hub.send: published for the other replicas, then delivered to this one's members. */
    async send(group: string, eventName: string, payload: unknown, sendOpts?: { membershipVersion?: number }): Promise<void> {
      const version = sendOpts?.membershipVersion;
      await backplane.publish({ kind: 'send', origin: replicaId, group, event: eventName, payload, ...(version === undefined ? {} : { version }) });
      membership.deliver(group, eventName, payload, version);
    },

    async disconnectUser(userId: string, reason: string): Promise<void> {
      disconnectLocal(userId, reason);
      await backplane.publish({ kind: 'disconnect', origin: replicaId, userId, reason });
    },

    async addUserToGroup(userId: string, group: string): Promise<void> {
      joinLocal(userId, group);
      await backplane.publish({ kind: 'join', origin: replicaId, userId, group });
    },

    async removeUserFromGroup(userId: string, group: string): Promise<void> {
      leaveLocal(userId, group);
      await backplane.publish({ kind: 'leave', origin: replicaId, userId, group });
    },

    /** Closes the user's connections on this replica only (the access recheck: every replica asks for itself). */
    disconnectLocal,

    /** A connection queued its first frame since its last flush (ConnectionHooks.onQueued). */
    onQueued(conn: HubConnection): void {
      if (toFlush.push(conn) === 1) process.nextTick(flushQueued);
    },

    /** Forgets membership versions of groups without a local member (the liveness tick). */
    prune: membership.prune,
  };
}
