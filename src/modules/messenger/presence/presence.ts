import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { query, type Db } from '../../../platform/db/index.ts';
import { errorText } from '../../../platform/errors/index.ts';
import type { Logger } from '../../../platform/observability/index.ts';
import { tickBatcher, userGroup, type Hub, type PresenceChange } from '../../../platform/realtime/index.ts';
import { Nullable, Text } from '../../../platform/types/index.ts';
import type { PresenceChangedFrame } from '../realtime-dispatch/frames.ts';

/**
 * Presence: who may see whether a user is online and when they were last seen — their Accepted
 * contacts and the other member of a Direct chat both of them have accepted (a chat opened by a
 * stranger is a message request until answered: docs/security.md, "Consent"), never anyone on
 * either side of an active block. The relation is symmetric, so one query answers both "who hears about U" and "whom may U
 * ask about". The hub knows who is connected on any replica (Redis claims); this part decides who
 * hears it: `presence_changed` frames, live only (not in the events stream: a client that reconnects
 * asks GET /api/messenger/presence for the state now instead of replaying old flips).
 */

/** The users who may see `userId`'s presence (and whose presence `userId` may see). */
export async function presencePeers(db: Db, userId: string): Promise<string[]> {
  return (await presencePeersOf(db, [userId])).get(userId) ?? [];
}

/** presencePeers of many users in one read (the flips of one event-loop turn); a user without peers is absent. */
export async function presencePeersOf(db: Db, userIds: readonly string[]): Promise<Map<string, string[]>> {
  const { rows } = await query<{ of: string; userId: string }>(
    db,
    sql`with me as (select distinct unnest(${sql.param([...userIds])}::uuid[]) as id),
        related as (
          select me.id as of, c.addressee_user_id as user_id
            from me join messenger.contacts c on c.requester_user_id = me.id and c.status = 'Accepted'
          union
          select me.id, c.requester_user_id
            from me join messenger.contacts c on c.addressee_user_id = me.id and c.status = 'Accepted'
          union
          select me.id, other.user_id
            from me
            join messenger.chat_participants mine on mine.user_id = me.id and mine.status = 'Active' and mine.accepted_at is not null
            join messenger.chats ch on ch.id = mine.chat_id and ch.kind = 'Direct'
            join messenger.chat_participants other on other.chat_id = mine.chat_id and other.user_id <> me.id and other.status = 'Active'
                                                    and other.accepted_at is not null
        )
        select r.of::text as "of", r.user_id::text as "userId" from related r
         where not exists (
           select 1 from messenger.blacklist_entries b
            where b.status = 'Blocked'
              and ((b.owner_user_id = r.of and b.blocked_user_id = r.user_id) or (b.owner_user_id = r.user_id and b.blocked_user_id = r.of)))`,
  );
  const peers = new Map<string, string[]>();
  for (const r of rows) {
    const list = peers.get(r.of);
    if (list) list.push(r.userId);
    else peers.set(r.of, [r.userId]);
  }
  return peers;
}

/** Pushes each online/offline flip the hub announces to the user's peers. */
export function announcePresence(db: Db, hub: Hub, log: Logger): (change: PresenceChange) => void {
  // The flips of one event-loop turn (a reconnect storm's first connections) read their peers in one query.
  const peersOf = tickBatcher((userIds: string[]) => presencePeersOf(db, userIds), { missing: [] as string[] });
  return (change) => {
    const frame: PresenceChangedFrame = { UserId: change.userId, Online: change.online, LastSeenAt: change.lastSeenAt?.toISOString() ?? null };
    void peersOf(change.userId)
      .then((peers) => Promise.all(peers.map((id) => hub.send(userGroup(id), 'presence_changed', frame))))
      // The driver's message: drizzle's own carries the whole statement and its parameters.
      .catch((err: unknown) => log.warn({ err: { message: errorText(err, { name: false }) }, userId: change.userId }, 'presence_changed not pushed'));
  };
}

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
/** Users asked about in one call. */
export const PRESENCE_MAX_USERS = 100;

const PresenceQuery = Type.Object(
  {
    userIds: Text({
      pattern: `^${UUID}(,${UUID}){0,${PRESENCE_MAX_USERS - 1}}$`,
      maxLength: PRESENCE_MAX_USERS * 37,
      description: `Comma-separated user ids, at most ${PRESENCE_MAX_USERS}`,
    }),
  },
  { additionalProperties: false },
);

const PresenceAnswer = Type.Object({
  users: Type.Array(
    Type.Object({
      userId: Type.String(),
      online: Nullable(Type.Boolean({ description: 'null: unknown (not a user whose presence you may see)' })),
      lastSeenAt: Nullable(Type.String({ description: 'When their last connection closed; null while online, never seen, or unknown' })),
    }),
  ),
});

export function registerPresenceRoutes(app: FastifyInstance, db: Db, hub: Hub): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get(
    '/api/messenger/presence',
    {
      preHandler: app.requireUser,
      schema: {
        operationId: 'getPresence',
        tags: ['messenger-presence'],
        summary:
          'Online state and last-seen time of users you may see (Accepted contacts, the other member of a Direct chat you both accepted, never across a block); others answered as unknown (online null)',
        querystring: PresenceQuery,
        // The kernel's and the messenger guard's codes only (messenger/routes.ts).
        response: { 200: PresenceAnswer },
      },
    },
    async (req) => {
      const caller = req.principal!.userId;
      const asked = [...new Set(req.query.userIds.toLowerCase().split(','))];
      const peers = new Set([...(await presencePeers(db, caller)), caller]);
      const visible = asked.filter((id) => peers.has(id));
      const known = new Map((await hub.presenceOf(visible)).map((p) => [p.userId, p]));
      return {
        users: asked.map((userId) => {
          const p = known.get(userId);
          return p ? { userId, online: p.online, lastSeenAt: p.lastSeenAt?.toISOString() ?? null } : { userId, online: null, lastSeenAt: null };
        }),
      };
    },
  );
}
