import { sql } from 'drizzle-orm';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { Db, Queryable } from '../../../platform/db/index.ts';
import { defineConsumer, PoisonMessageError, type ConsumerDefinition } from '../../../platform/events/index.ts';
import { Uuid } from '../../../platform/types/index.ts';
import { TOPICS } from '../../../event-topics.ts';
import { PROPERTY_OBJECT_VIEW_ENDED_EVENT, type PropertyObjectViewEndedPayload } from '../events.ts';

/**
 * PropertyObjectViewEndedConsumer (property-object-view-stats.md): counts each ended view once into
 * its property object's stats. Dedupe is by PropertyObjectViewId (INV-LVS-003), not by message id,
 * so a view re-announced under another message id is not counted twice either.
 */

export const VIEW_STATS_CONSUMER = 'user-activity.property-object-view-stats';

/**
 * Longest view duration a real event can carry: the closer stores it in an `integer` column
 * (user_activity.property_object_views.duration_seconds), so a larger value is not a view of ours.
 * Unbounded, a huge number passed validation and then overflowed the bigint sum in PostgreSQL.
 */
export const MAX_VIEW_DURATION_SECONDS = 2_147_483_647;

/** What the stats need from the payload; anything else in it is not this consumer's business. */
const CountedFields = Type.Object({
  PropertyObjectViewId: Uuid,
  PropertyObjectId: Uuid,
  DurationSeconds: Type.Integer({ minimum: 0, maximum: MAX_VIEW_DURATION_SECONDS }),
});
type CountedFields = Static<typeof CountedFields>;

export const INVALID_PAYLOAD = 'USER_ACTIVITY_VIEW_ENDED_INVALID_PAYLOAD';

function countedFields(payload: unknown): CountedFields {
  if (!Value.Check(CountedFields, payload)) {
    const first = [...Value.Errors(CountedFields, payload)][0];
    throw new PoisonMessageError(INVALID_PAYLOAD, `PropertyObjectViewEnded payload invalid at ${first?.path || '/'}: ${first?.message ?? 'not an object'}`);
  }
  return payload;
}

/** Counts the view once; returns false when it was counted before. */
export async function countEndedView(tx: Db, fields: CountedFields, now: Date): Promise<boolean> {
  const marked = await tx.execute(sql`
    insert into user_activity.counted_property_object_views (property_object_view_id, property_object_id, counted_at)
    values (${fields.PropertyObjectViewId}, ${fields.PropertyObjectId}, ${now})
    on conflict (property_object_view_id) do nothing`);
  if ((marked.rowCount ?? 0) === 0) return false;
  await tx.execute(sql`
    insert into user_activity.property_object_view_stats (property_object_id, views_count, total_duration_seconds, updated_at)
    values (${fields.PropertyObjectId}, 1, ${fields.DurationSeconds}, ${now})
    on conflict (property_object_id) do update
      set views_count = property_object_view_stats.views_count + 1,
          total_duration_seconds = property_object_view_stats.total_duration_seconds + excluded.total_duration_seconds,
          updated_at = excluded.updated_at`);
  return true;
}

export interface PropertyObjectStats {
  propertyObjectId: string;
  viewsCount: number;
  totalDurationSeconds: number;
}

export async function getPropertyObjectStats(c: Queryable, propertyObjectId: string): Promise<PropertyObjectStats> {
  const { rows } = await c.query<{ viewsCount: string; totalDurationSeconds: string }>(
    `select views_count as "viewsCount", total_duration_seconds as "totalDurationSeconds"
       from user_activity.property_object_view_stats where property_object_id = $1`,
    [propertyObjectId],
  );
  const row = rows[0];
  return {
    propertyObjectId,
    viewsCount: Number(row?.viewsCount ?? 0),
    totalDurationSeconds: Number(row?.totalDurationSeconds ?? 0),
  };
}

export function viewStatsConsumer(deps: { now: () => Date }): ConsumerDefinition<PropertyObjectViewEndedPayload> {
  return defineConsumer<PropertyObjectViewEndedPayload>({
    name: VIEW_STATS_CONSUMER,
    topic: TOPICS.propertyObjectViewEnded,
    groupId: VIEW_STATS_CONSUMER,
    eventTypes: [PROPERTY_OBJECT_VIEW_ENDED_EVENT],
    partitionsConcurrently: 6,
    async handle(event, tx) {
      await countEndedView(tx, countedFields(event.payload), deps.now());
    },
  });
}
