import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';

/** The retention deletes: each one bounded statement, repeated by the job while it comes back full. */

export type Deleted = { id: string };

/** Inactive views that ended before the cutoff, a batch at a time. */
export async function deleteOldViews(db: Db, cutoff: Date, limit: number): Promise<Deleted[]> {
  const { rows } = await query<Deleted>(
    db,
    sql`delete from user_activity.property_object_views where id in (
       select id from user_activity.property_object_views
        where status = 'Inactive' and ended_at < ${cutoff}
        order by ended_at limit ${limit}
        for update skip locked)
     returning id`,
  );
  return rows;
}

/** Inactive sessions that ended before the cutoff and have no views left (the FK is restrict). */
export async function deleteOldSessions(db: Db, cutoff: Date, limit: number): Promise<Deleted[]> {
  const { rows } = await query<Deleted>(
    db,
    sql`delete from user_activity.sessions where id in (
       select s.id from user_activity.sessions s
        where s.status = 'Inactive' and s.ended_at < ${cutoff}
          and not exists (select 1 from user_activity.property_object_views v where v.session_id = s.id)
        order by s.ended_at limit ${limit}
        for update skip locked)
     returning id`,
  );
  return rows;
}

/** Stats dedupe markers as old as the rows they stood for: no redelivery reaches that far back. */
export async function deleteOldCountedViews(db: Db, cutoff: Date, limit: number): Promise<Deleted[]> {
  const { rows } = await query<Deleted>(
    db,
    sql`delete from user_activity.counted_property_object_views where property_object_view_id in (
       select property_object_view_id from user_activity.counted_property_object_views
        where counted_at < ${cutoff} order by counted_at limit ${limit})
     returning property_object_view_id as id`,
  );
  return rows;
}
