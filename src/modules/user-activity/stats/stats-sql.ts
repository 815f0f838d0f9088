import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';

/** SQL of the property-object view stats and their dedupe markers. */

/** What counting needs of a PropertyObjectViewEnded payload (checked by the consumer first). */
export interface CountedView {
  PropertyObjectViewId: string;
  PropertyObjectId: string;
  DurationSeconds: number;
}

/** Counts the view once; returns false when it was counted before. */
export async function countEndedView(tx: Db, fields: CountedView, now: Date): Promise<boolean> {
  const marked = await query(
    tx,
    sql`insert into user_activity.counted_property_object_views (property_object_view_id, property_object_id, counted_at)
    values (${fields.PropertyObjectViewId}, ${fields.PropertyObjectId}, ${now})
    on conflict (property_object_view_id) do nothing`,
  );
  if (marked.rowCount === 0) return false;
  await query(
    tx,
    sql`insert into user_activity.property_object_view_stats (property_object_id, views_count, total_duration_seconds, updated_at)
    values (${fields.PropertyObjectId}, 1, ${fields.DurationSeconds}, ${now})
    on conflict (property_object_id) do update
      set views_count = property_object_view_stats.views_count + 1,
          total_duration_seconds = property_object_view_stats.total_duration_seconds + excluded.total_duration_seconds,
          updated_at = excluded.updated_at`,
  );
  return true;
}

export interface PropertyObjectStats {
  propertyObjectId: string;
  viewsCount: number;
  totalDurationSeconds: number;
}

export async function getPropertyObjectStats(db: Db, propertyObjectId: string): Promise<PropertyObjectStats> {
  const { rows } = await query<{ viewsCount: string; totalDurationSeconds: string }>(
    db,
    sql`select views_count as "viewsCount", total_duration_seconds as "totalDurationSeconds"
       from user_activity.property_object_view_stats where property_object_id = ${propertyObjectId}`,
  );
  const row = rows[0];
  return {
    propertyObjectId,
    viewsCount: Number(row?.viewsCount ?? 0),
    totalDurationSeconds: Number(row?.totalDurationSeconds ?? 0),
  };
}
