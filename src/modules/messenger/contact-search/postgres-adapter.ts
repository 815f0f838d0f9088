import type { Queryable } from '../../../platform/db/index.ts';
import type { ContactSearchIndex, IndexOutcome, MessengerContactSearchDocument } from './port.ts';
import { SearchUnavailableError } from './port.ts';

/**
 * The PostgreSQL search adapter: documents in messenger.contact_search_documents, written by the
 * same indexer and rebuild job as Elasticsearch would be, so both adapters behave alike.
 */

const COLUMNS = `user_id as "userId", first_name as "firstName", middle_name as "middleName", last_name as "lastName",
  phone_number as "phoneNumber", is_active as "isActive", revision`;

type Row = Omit<MessengerContactSearchDocument, 'revision'> & { revision: string };
const toDocument = (r: Row): MessengerContactSearchDocument => ({ ...r, revision: Number(r.revision) });

export function createPostgresContactSearch(pool: Queryable, clock: { now(): Date }): ContactSearchIndex {
  const unavailable = (err: unknown): never => {
    throw new SearchUnavailableError('contact search (PostgreSQL) failed', { cause: err });
  };
  return {
    kind: 'postgres',
    async prepare() {},

    async index(docs): Promise<IndexOutcome> {
      if (docs.length === 0) return { failed: [] };
      // One statement for the batch; a lower revision than the stored one changes nothing.
      await pool.query(
        `insert into messenger.contact_search_documents
           (user_id, first_name, middle_name, last_name, phone_number, is_active, revision, indexed_at)
         select d.user_id, d.first_name, d.middle_name, d.last_name, d.phone_number, d.is_active, d.revision, $8
           from unnest($1::uuid[], $2::varchar[], $3::varchar[], $4::varchar[], $5::varchar[], $6::boolean[], $7::bigint[])
                as d(user_id, first_name, middle_name, last_name, phone_number, is_active, revision)
          -- One lock order for every writer (indexer, rebuild job), so they never deadlock.
          order by d.user_id
         on conflict (user_id) do update
           set first_name = excluded.first_name, middle_name = excluded.middle_name, last_name = excluded.last_name,
               phone_number = excluded.phone_number, is_active = excluded.is_active, revision = excluded.revision,
               indexed_at = excluded.indexed_at
         where contact_search_documents.revision <= excluded.revision`,
        [
          docs.map((d) => d.userId),
          docs.map((d) => d.firstName),
          docs.map((d) => d.middleName),
          docs.map((d) => d.lastName),
          docs.map((d) => d.phoneNumber),
          docs.map((d) => d.isActive),
          docs.map((d) => d.revision),
          clock.now(),
        ],
      );
      return { failed: [] };
    },

    async remove(userIds) {
      if (userIds.length === 0) return;
      await pool.query(`delete from messenger.contact_search_documents where user_id = any($1::uuid[])`, [userIds]);
    },

    async findActiveByPhone(phoneNumber) {
      const { rows } = await pool
        .query<Row>(
          `select ${COLUMNS} from messenger.contact_search_documents
            where phone_number = $1 and is_active order by revision desc limit 1`,
          [phoneNumber],
        )
        .catch(unavailable);
      return rows[0] ? toDocument(rows[0]) : null;
    },

    async listUserIds(after, limit) {
      const { rows } = await pool.query<{ userId: string }>(
        `select user_id as "userId" from messenger.contact_search_documents
          where $1::uuid is null or user_id > $1::uuid order by user_id limit $2`,
        [after, limit],
      );
      return rows.map((r) => r.userId);
    },

    async refresh() {},

    async health() {
      try {
        await pool.query('select 1 from messenger.contact_search_documents limit 1');
        return 'ok';
      } catch {
        return 'down';
      }
    },

    async close() {},
  };
}
