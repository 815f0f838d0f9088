import type { Db } from '../../../platform/db/index.ts';
import { envelopeFromWire, type EventEnvelope, type IncomingMessage, type TopicReader } from '../../../platform/events/index.ts';
import { newId } from '../../../platform/time.ts';
import { TOPICS } from '../../../event-topics.ts';
import { USER_UPSERTED_EVENT } from '../../../contracts/identity-events.ts';
import { applySnapshot, eventIds, readEvent, type UserSyncDeps } from './apply.ts';
import { USER_SYNC_GROUP } from './user-sync.consumer.ts';
import { MESSENGER_DEFAULTS } from '../defaults.ts';

/**
 * The replica resync runbook (seed 002 "Replay"): re-applies pin.identity.users.v1 from its
 * earliest retained offset, for every user or a list of them. Resetting the consumer group's
 * offsets does not do it: the inbox skips every message it has seen, and the version guard skips a
 * row whose version is damaged (too high). So this reads the topic in a throwaway group, keeps
 * each user's newest record (highest Version, the later offset on a tie), and writes it with the
 * guard forced, through the consumer's own apply path (phone conflicts, search document,
 * deactivation push). Records that arrive meanwhile are then applied the normal way, guarded, so
 * a change the live consumer applied during the resync is never rolled back by it.
 *
 * The topic must keep every user's newest record (compaction, or retention longer than the
 * oldest user's last change); a user whose records are gone is reported, and left as it is.
 */

export interface ResyncDeps extends UserSyncDeps {
  db: Db;
  /** Undefined on the in-process event bus (nothing to read again). */
  openTopicReader: ((topic: string, groupId: string) => Promise<TopicReader>) | undefined;
}

export interface ResyncResult {
  resyncId: string;
  /** Records read off the topic (all types, all users). */
  messagesRead: number;
  /** Users whose newest UserUpserted record was found (among those asked for). */
  usersOnTopic: number;
  /** Users whose replica row was written from their newest record (forced). */
  usersApplied: number;
  /** Newer records that arrived during the resync, applied with the normal version guard. */
  laterRecordsApplied: number;
  /** Records that cannot be read or applied (the consumer dead-letters them): left out. */
  invalidRecords: number;
  /** Users asked for with no UserUpserted record on the topic (their rows are left as they are). */
  notOnTopic: string[];
  durationMs: number;
}

interface Newest {
  event: EventEnvelope<unknown>;
  version: number;
  partition: number;
  offset: bigint;
}

/** The thrown codes of the route. */
export class ResyncUnavailable extends Error {}

export async function resyncUserReplica(deps: ResyncDeps, userIds: readonly string[] | null): Promise<ResyncResult> {
  if (!deps.openTopicReader) throw new ResyncUnavailable('the resync reads Kafka, and this service runs on the in-process event bus (KAFKA_BROKERS is unset)');
  const started = Date.now();
  const resyncId = newId();
  const log = deps.log.child({ resyncId });
  const wanted = userIds ? new Set(userIds.map((u) => u.toLowerCase())) : null;
  const found = new Set<string>();
  const counts = { messagesRead: 0, usersApplied: 0, laterRecordsApplied: 0, invalidRecords: 0 };
  let phase = 'reading';
  const progress = setInterval(() => log.info({ phase, ...counts, usersOnTopic: found.size }, 'user replica resync progress'), MESSENGER_DEFAULTS.resyncProgressEveryMs);

  /** Folds records into the newest per user (of the users asked for). */
  const collect = (into: Map<string, Newest>) => (messages: IncomingMessage[]) => {
    counts.messagesRead += messages.length;
    for (const m of messages) {
      let event: EventEnvelope<unknown>;
      try {
        event = envelopeFromWire(m, TOPICS.identityUsers);
      } catch {
        counts.invalidRecords++;
        continue;
      }
      if (event.eventType !== USER_UPSERTED_EVENT) continue;
      const p = event.payload as { UserId?: unknown; Version?: unknown } | null;
      if (typeof p?.UserId !== 'string' || typeof p.Version !== 'number') {
        counts.invalidRecords++;
        continue;
      }
      const userId = p.UserId.toLowerCase();
      if (wanted && !wanted.has(userId)) continue;
      const offset = BigInt(m.offset);
      const before = into.get(userId);
      // One user's records share a partition (key = UserId): on equal versions the later offset wins.
      if (!before || p.Version > before.version || (p.Version === before.version && m.partition === before.partition && offset > before.offset)) {
        into.set(userId, { event, version: p.Version, partition: m.partition, offset });
      }
    }
  };

  /** Writes each user's record, MESSENGER_DEFAULTS.resyncApplyChunk users a transaction; returns how many were written. */
  async function apply(records: Map<string, Newest>, force: boolean): Promise<number> {
    const items = [...records.values()].flatMap((n) => {
      try {
        // The consumer's own reading: an invalid record is what it would dead-letter.
        return [{ snapshot: readEvent(n.event, deps, () => {}, false), ids: eventIds(n.event) }];
      } catch {
        counts.invalidRecords++;
        return [];
      }
    });
    let written = 0;
    for (let i = 0; i < items.length; i += MESSENGER_DEFAULTS.resyncApplyChunk) {
      await deps.db.transaction(async (tx) => {
        for (const { snapshot, ids } of items.slice(i, i + MESSENGER_DEFAULTS.resyncApplyChunk)) {
          if ((await applySnapshot(tx, snapshot, ids, deps, undefined, force)) !== 'stale') written++;
        }
      });
    }
    return written;
  }

  const reader = await deps.openTopicReader(TOPICS.identityUsers, `${USER_SYNC_GROUP}.resync.${resyncId}`);
  try {
    log.info({ scope: wanted ? 'users' : 'all', users: wanted?.size }, 'user replica resync started');
    const newest = new Map<string, Newest>();
    await reader.readToEnd(collect(newest));
    for (const u of newest.keys()) found.add(u);
    phase = 'applying';
    counts.usersApplied = await apply(newest, true);
    // Records that arrived while the pass above read and wrote: newer than what it forced, so the
    // guard applies them; one the live consumer already applied is simply stale here.
    phase = 'catching up';
    for (let pass = 0; pass < MESSENGER_DEFAULTS.resyncMaxLaterPasses; pass++) {
      const later = new Map<string, Newest>();
      await reader.readToEnd(collect(later));
      if (later.size === 0) break;
      for (const u of later.keys()) found.add(u);
      counts.laterRecordsApplied += await apply(later, false);
    }
    const result: ResyncResult = {
      resyncId,
      ...counts,
      usersOnTopic: found.size,
      notOnTopic: wanted ? [...wanted].filter((u) => !found.has(u)) : [],
      durationMs: Date.now() - started,
    };
    log.info({ ...result, notOnTopic: result.notOnTopic.length }, 'user replica resync finished');
    return result;
  } catch (err) {
    log.error({ err, phase, ...counts }, 'user replica resync failed');
    throw err;
  } finally {
    clearInterval(progress);
    await reader.close();
  }
}
