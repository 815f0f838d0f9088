import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { defineConsumer, PoisonMessageError, type ConsumerDefinition } from '../../../platform/events/index.ts';
import { Uuid } from '../../../platform/types/index.ts';
import { TOPICS } from '../../../event-topics.ts';
import { PROPERTY_OBJECT_VIEW_ENDED_EVENT, type PropertyObjectViewEndedPayload } from '../events.ts';
import { countEndedView } from './stats-sql.ts';

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
