import { Client, errors } from '@elastic/elasticsearch';
import { errorText } from '../../../platform/errors/index.ts';
import type { ContactSearchIndex, IndexOutcome, MessengerContactSearchDocument } from './port.ts';
import { SearchUnavailableError } from './port.ts';

/**
 * The Elasticsearch search adapter (8.x; the client is pinned to the server's major). One
 * document per user, `_id` = UserId, written with external versioning on the replica revision
 * (`external_gte`), so an older read of a row never replaces a newer document — whichever of
 * the indexer and the rebuild job writes last. Phone lookups are exact term queries on E.164.
 */

const MAPPINGS = {
  dynamic: 'strict',
  properties: {
    userId: { type: 'keyword' },
    firstName: { type: 'text', fields: { raw: { type: 'keyword', ignore_above: 256 } } },
    middleName: { type: 'text' },
    lastName: { type: 'text', fields: { raw: { type: 'keyword', ignore_above: 256 } } },
    phoneNumber: { type: 'keyword' },
    isActive: { type: 'boolean' },
    revision: { type: 'long' },
  },
} as const;

export interface ElasticsearchContactSearchOptions {
  url: string;
  index: string;
  requestTimeoutMs: number;
}

const isNotFound = (err: unknown) => err instanceof errors.ResponseError && err.statusCode === 404;

export function createElasticsearchContactSearch(opts: ElasticsearchContactSearchOptions): ContactSearchIndex {
  // No client-side retries: the indexer retries with its own backoff, a search fails fast (503).
  const client = new Client({ node: opts.url, requestTimeout: opts.requestTimeoutMs, maxRetries: 0 });
  const index = opts.index;

  const unavailable = (what: string) => (err: unknown): never => {
    throw new SearchUnavailableError(`elasticsearch ${what} failed: ${errorText(err, { root: false, name: false, max: 200 })}`, {
      cause: err,
    });
  };

  return {
    kind: 'elasticsearch',

    // One HEAD per batch: cheap, and an index deleted by hand is recreated with its mapping
    // instead of being auto-created by the next bulk write with guessed field types.
    async prepare() {
      try {
        if (!(await client.indices.exists({ index }))) {
          await client.indices.create({
            index,
            settings: { number_of_shards: 1, number_of_replicas: 0 },
            mappings: MAPPINGS,
          });
        }
      } catch (err) {
        // Another replica created it in between: fine.
        const type = err instanceof errors.ResponseError ? (err.body as { error?: { type?: string } })?.error?.type : undefined;
        if (type !== 'resource_already_exists_exception') unavailable('index creation')(err);
      }
    },

    async index(docs): Promise<IndexOutcome> {
      if (docs.length === 0) return { failed: [] };
      const operations = docs.flatMap((d) => [
        { index: { _index: index, _id: d.userId, version: d.revision, version_type: 'external_gte' as const } },
        d,
      ]);
      const res = await client.bulk({ operations }).catch(unavailable('bulk index'));
      if (!res.errors) return { failed: [] };
      const failed: IndexOutcome['failed'] = [];
      res.items.forEach((item, i) => {
        const r = item.index;
        // 409: a document with a higher revision is already there — the newer state won; fine.
        if (!r || r.status < 300 || r.status === 409) return;
        failed.push({ userId: docs[i]!.userId, reason: `${r.status} ${r.error?.type ?? 'error'}` });
      });
      return { failed };
    },

    async remove(userIds) {
      if (userIds.length === 0) return;
      const res = await client
        .bulk({ operations: userIds.map((id) => ({ delete: { _index: index, _id: id } })) })
        .catch(unavailable('bulk delete'));
      const bad = res.items.find((item) => item.delete && item.delete.status >= 300 && item.delete.status !== 404);
      if (bad) throw new SearchUnavailableError(`elasticsearch delete failed: ${bad.delete?.status} ${bad.delete?.error?.type ?? ''}`);
    },

    async findActiveByPhone(phoneNumber) {
      try {
        const res = await client.search<MessengerContactSearchDocument>({
          index,
          size: 1,
          query: { bool: { filter: [{ term: { phoneNumber } }, { term: { isActive: true } }] } },
          sort: [{ revision: 'desc' }],
        });
        return res.hits.hits[0]?._source ?? null;
      } catch (err) {
        if (isNotFound(err)) return null; // nothing indexed yet
        return unavailable('search')(err);
      }
    },

    async listUserIds(after, limit) {
      try {
        const res = await client.search<{ userId: string }>({
          index,
          size: limit,
          _source: ['userId'],
          sort: [{ userId: 'asc' }],
          ...(after ? { search_after: [after] } : {}),
        });
        return res.hits.hits.map((h) => h._source!.userId);
      } catch (err) {
        if (isNotFound(err)) return [];
        return unavailable('scan')(err);
      }
    },

    async refresh() {
      await client.indices.refresh({ index }).catch((err: unknown) => {
        if (!isNotFound(err)) unavailable('refresh')(err);
      });
    },

    async health() {
      try {
        const h = await client.cluster.health({ timeout: '2s' });
        return h.status === 'red' ? 'down' : 'ok';
      } catch {
        return 'down';
      }
    },

    async close() {
      await client.close();
    },
  };
}
