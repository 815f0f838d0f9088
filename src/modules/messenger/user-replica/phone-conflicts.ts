import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';

/**
 * Phone conflicts as support reviews them: a snapshot asked for a phone another live replica row
 * holds, and a phone is unique among live rows (INV-MU-2, MSG_USER_PHONE_CONFLICT).
 */

export interface PhoneConflict {
  id: string;
  userId: string;
  phoneNumber: string;
  holderUserId: string | null;
  identityUserVersion: number;
  messageId: string;
  occurrences: number;
  status: 'Open' | 'Resolved';
  resolution: 'Superseded' | 'PhoneReleased' | null;
  detectedAt: string;
  lastSeenAt: string;
  resolvedAt: string | null;
}

type Row = Omit<PhoneConflict, 'identityUserVersion' | 'detectedAt' | 'lastSeenAt' | 'resolvedAt'> & {
  identityUserVersion: string;
  detectedAt: Date;
  lastSeenAt: Date;
  resolvedAt: Date | null;
};

/** A page of conflicts with the given status, oldest first (keyset on the UUIDv7 id). */
export async function listPhoneConflicts(
  db: Db,
  opts: { status: 'Open' | 'Resolved'; after?: string; limit: number },
): Promise<{ items: PhoneConflict[]; nextAfter: string | null }> {
  const { rows } = await query<Row>(
    db,
    sql`select id, user_id as "userId", phone_number as "phoneNumber", holder_user_id as "holderUserId",
            identity_user_version as "identityUserVersion", message_id as "messageId", occurrences, status, resolution,
            detected_at as "detectedAt", last_seen_at as "lastSeenAt", resolved_at as "resolvedAt"
       from messenger.user_phone_conflicts
      where status = ${opts.status} and (${opts.after ?? null}::uuid is null or id > ${opts.after ?? null}::uuid)
      order by id limit ${opts.limit + 1}`,
  );
  const page = rows.slice(0, opts.limit).map((r) => ({
    ...r,
    identityUserVersion: Number(r.identityUserVersion),
    detectedAt: r.detectedAt.toISOString(),
    lastSeenAt: r.lastSeenAt.toISOString(),
    resolvedAt: r.resolvedAt?.toISOString() ?? null,
  }));
  return { items: page, nextAfter: rows.length > opts.limit ? page[page.length - 1]!.id : null };
}
