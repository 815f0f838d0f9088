import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { errorText } from '../../../platform/errors/index.ts';
import type { ContactSearchIndex, IndexOutcome, MessengerContactSearchDocument } from './port.ts';
import { SearchUnavailableError } from './port.ts';

/**
 * The PostgreSQL search adapter: documents in messenger.contact_search_documents, written by the
 * same indexer and rebuild job as Elasticsearch would be, so both adapters behave alike.
 */

const COLUMNS = sql.raw(`user_id as "userId", first_name as "firstName", middle_name as "middleName", last_name as "lastName",
  phone_number as "phoneNumber", is_active as "isActive", revision`);

type Row = Omit<MessengerContactSearchDocument, 'revision'> & { revision: string };
const toDocument = (r: Row): MessengerContactSearchDocument => ({ ...r, revision: Number(r.revision) });

export function createPostgresContactSearch(db: Db, clock: { now(): Date }): ContactSearchIndex {
  // The driver's own message only: drizzle's error would carry the statement and its parameters (names, phones).
  const unavailable = (err: unknown): never => {
    throw new SearchUnavailableError(`contact search (PostgreSQL) failed: ${errorText(err, { name: false, max: 200 })}`, { cause: err });
  };
  return {
    kind: 'postgres',
    async prepare() {},

    async index(docs): Promise<IndexOutcome> {
      if (docs.length === 0) return { failed: [] };
      // One statement for the batch; a lower revision than the stored one changes nothing.
      const col = <T>(f: (d: MessengerContactSearchDocument) => T) => sql.param(docs.map(f));
      await query(
        db,
        sql`insert into messenger.contact_search_documents
           (user_id, first_name, middle_name, last_name, phone_number, is_active, revision, indexed_at)
         select d.user_id, d.first_name, d.middle_name, d.last_name, d.phone_number, d.is_active, d.revision, ${clock.now()}::timestamptz
           from unnest(${col((d) => d.userId)}::uuid[], ${col((d) => d.firstName)}::varchar[], ${col((d) => d.middleName)}::varchar[],
                       ${col((d) => d.lastName)}::varchar[], ${col((d) => d.phoneNumber)}::varchar[], ${col((d) => d.isActive)}::boolean[],
                       ${col((d) => d.revision)}::bigint[])
                as d(user_id, first_name, middle_name, last_name, phone_number, is_active, revision)
          -- One lock order for every writer (indexer, rebuild job), so they never deadlock.
          order by d.user_id
         on conflict (user_id) do update
           set first_name = excluded.first_name, middle_name = excluded.middle_name, last_name = excluded.last_name,
               phone_number = excluded.phone_number, is_active = excluded.is_active, revision = excluded.revision,
               indexed_at = excluded.indexed_at
         where contact_search_documents.revision <= excluded.revision`,
      ).catch(unavailable);
      return { failed: [] };
    },

    async remove(userIds) {
      if (userIds.length === 0) return;
      await query(db, sql`delete from messenger.contact_search_documents where user_id = any(${sql.param(userIds)}::uuid[])`).catch(unavailable);
    },

    async findActiveByPhone(phoneNumber) {
      const { rows } = await query<Row>(
        db,
        sql`select ${COLUMNS} from messenger.contact_search_documents
             where phone_number = ${phoneNumber} and is_active order by revision desc limit 1`,
      ).catch(unavailable);
      return rows[0] ? toDocument(rows[0]) : null;
    },

    async listUserIds(after, limit) {
      const { rows } = await query<{ userId: string }>(
        db,
        sql`select user_id as "userId" from messenger.contact_search_documents
             where ${after}::uuid is null or user_id > ${after}::uuid order by user_id limit ${limit}`,
      );
      return rows.map((r) => r.userId);
    },

    async refresh() {},

    async health() {
      try {
        await query(db, sql`select 1 from messenger.contact_search_documents limit 1`);
        return 'ok';
      } catch {
        return 'down';
      }
    },

    async close() {},
  };
}
