import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { trimStream } from '../../../../src/platform/push/stream-sql.ts';
import { newId } from '../../../../src/platform/time.ts';
import { createTestDatabase, type TestDatabase } from '../../../support/db.ts';

/**
 * Event-stream retention without an index on recorded_at: it reads the oldest positions through the
 * primary key and deletes those recorded before the cutoff up to the first younger one, moving the
 * horizon just past what it deleted.
 */

const CUTOFF = new Date('2026-03-01T10:00:00Z');
const OLD = new Date(CUTOFF.getTime() - 3_600_000);
const YOUNG = new Date(CUTOFF.getTime() + 1000);

const database: TestDatabase = await createTestDatabase();

/** Events at the given positions, each recorded at its time, on an empty stream. */
async function stream(events: [number, Date][]): Promise<void> {
  await database.pool.query('truncate push.realtime_events');
  await database.pool.query('update push.realtime_event_horizon set trimmed_below = 0 where id = 1');
  for (const [position, recordedAt] of events) {
    await database.pool.query(
      `insert into push.realtime_events (position, outbox_id, kind, target_kind, target_user_id, created_at, recorded_at)
       values ($1, $2, 'ContactRemoved', 'User', $3, $4, $4)`,
      [position, newId(), newId(), recordedAt],
    );
  }
}

/** The positions one call deleted, in order (the statement returns them in no particular order). */
const trimmed = async (limit: number) => (await trimStream(database.db, CUTOFF, limit)).sort((a, b) => a - b);
const left = async () => (await database.pool.query<{ p: string }>('select position::text as p from push.realtime_events order by position')).rows.map((r) => Number(r.p));
const horizon = async () => Number((await database.pool.query<{ t: string }>('select trimmed_below::text as t from push.realtime_event_horizon where id = 1')).rows[0]?.t ?? 0);

describe('event stream retention (trimStream)', () => {
  test('deletes the events recorded before the cutoff, oldest first, up to the first younger one, and moves the horizon past them', async () => {
    await stream([[1, OLD], [2, OLD], [3, YOUNG], [4, OLD], [5, YOUNG]]);
    assert.deepEqual(await trimmed(100), [1, 2]);
    assert.deepEqual(await left(), [3, 4, 5], 'an old event after a younger one waits for it');
    assert.equal(await horizon(), 3);
  });

  test('takes at most `limit` events a call; a stream with nothing old loses nothing', async () => {
    await stream([[10, OLD], [11, OLD], [12, OLD], [13, YOUNG]]);
    assert.deepEqual(await trimmed(2), [10, 11]);
    assert.deepEqual(await trimmed(2), [12]);
    assert.deepEqual(await trimmed(2), []);
    assert.deepEqual(await left(), [13]);
    assert.equal(await horizon(), 13);
  });

  test('a stream of old events only is trimmed whole, batch by batch', async () => {
    await stream([[20, OLD], [21, OLD], [22, OLD]]);
    assert.deepEqual(await trimmed(2), [20, 21]);
    assert.deepEqual(await trimmed(2), [22]);
    assert.deepEqual(await left(), []);
    assert.equal(await horizon(), 23);
  });
});
