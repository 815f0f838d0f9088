import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createBatchQueue, type ItemResult } from '../../../../src/modules/messenger/messages/send-queue.ts';

/** A queue whose batches finish when the test says so, recording what each batch held. */
function controlledQueue(opts: { maxBatch: number; maxInFlight: number; minIntervalMs?: number; fail?: (item: number) => boolean }) {
  const batches: number[][] = [];
  const finish: (() => void)[] = [];
  const queue = createBatchQueue<number, number>({
    ...opts,
    run: (items) =>
      new Promise<ItemResult<number>[]>((resolve) => {
        batches.push(items);
        finish.push(() => resolve(items.map((i) => (opts.fail?.(i) ? { ok: false, error: new Error(`item ${i} failed`) } : { ok: true, value: i * 10 }))));
      }),
  });
  return { queue, batches, finish };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('send queue (coalescing concurrent sends)', () => {
  test('a call on an idle queue runs at once, alone', async () => {
    const { queue, batches, finish } = controlledQueue({ maxBatch: 10, maxInFlight: 1 });
    const one = queue.submit(1);
    await turn();
    assert.deepEqual(batches, [[1]]);
    finish[0]!();
    assert.equal(await one, 10);
  });

  test('calls of the same turn go together; calls arriving while the slots are busy wait and go together next, in order', async () => {
    const { queue, batches, finish } = controlledQueue({ maxBatch: 10, maxInFlight: 1 });
    const first = [1, 2, 3].map((i) => queue.submit(i));
    await turn();
    assert.deepEqual(batches, [[1, 2, 3]]);
    const waiting = [4, 5, 6, 7].map((i) => queue.submit(i));
    await turn();
    assert.equal(batches.length, 1, 'no second batch while the only slot is busy');
    assert.equal(queue.waiting, 4);
    finish[0]!();
    assert.deepEqual(await Promise.all(first), [10, 20, 30]);
    await turn();
    assert.deepEqual(batches[1], [4, 5, 6, 7]);
    finish[1]!();
    assert.deepEqual(await Promise.all(waiting), [40, 50, 60, 70]);
  });

  test('batches hold at most maxBatch calls and at most maxInFlight run at once', async () => {
    const { queue, batches, finish } = controlledQueue({ maxBatch: 3, maxInFlight: 2 });
    const all = Array.from({ length: 8 }, (_, i) => queue.submit(i));
    await turn();
    assert.deepEqual(batches, [
      [0, 1, 2],
      [3, 4, 5],
    ]);
    assert.equal(queue.inFlight, 2);
    finish[0]!();
    await turn();
    assert.deepEqual(batches[2], [6, 7]);
    finish[1]!();
    finish[2]!();
    assert.deepEqual(await Promise.all(all), [0, 10, 20, 30, 40, 50, 60, 70]);
    assert.equal(queue.inFlight, 0);
  });

  test('a failed item fails alone; a batch that throws fails each of its calls', async () => {
    const { queue, finish } = controlledQueue({ maxBatch: 10, maxInFlight: 1, fail: (i) => i === 2 });
    const results = [1, 2, 3].map((i) => queue.submit(i).then((v) => ({ v }), (e: Error) => ({ e: e.message })));
    await turn();
    finish[0]!();
    assert.deepEqual(await Promise.all(results), [{ v: 10 }, { e: 'item 2 failed' }, { v: 30 }]);

    const throwing = createBatchQueue<number, number>({ maxBatch: 10, maxInFlight: 1, run: async () => Promise.reject(new Error('statement failed')) });
    const settled = await Promise.allSettled([throwing.submit(1), throwing.submit(2)]);
    assert.deepEqual(
      settled.map((s) => s.status === 'rejected' && (s.reason as Error).message),
      ['statement failed', 'statement failed'],
    );
    // The queue keeps working after a failed batch.
    const ok = createBatchQueue<number, number>({ maxBatch: 2, maxInFlight: 1, run: async (items) => items.map((i) => ({ ok: true, value: i })) });
    assert.deepEqual(await Promise.all([ok.submit(1), ok.submit(2), ok.submit(3)]), [1, 2, 3]);
  });

  test('past maxWaiting a call is refused at once with whenFull(), and taken again once the queue drains', async () => {
    const full = new Error('full');
    const batches: number[][] = [];
    const finish: (() => void)[] = [];
    const queue = createBatchQueue<number, number>({
      maxBatch: 10,
      maxInFlight: 1,
      maxWaiting: 2,
      whenFull: () => full,
      run: (items) => new Promise((resolve) => (batches.push(items), finish.push(() => resolve(items.map((i) => ({ ok: true, value: i })))))),
    });
    const running = queue.submit(1);
    await turn();
    const waiting = [queue.submit(2), queue.submit(3)];
    await assert.rejects(queue.submit(4), (err) => err === full);
    assert.equal(queue.waiting, 2, 'the refused call never queued');
    finish[0]!();
    await running;
    await turn();
    finish[1]!();
    assert.deepEqual(await Promise.all(waiting), [2, 3]);
    assert.equal(await Promise.all([queue.submit(5), turn().then(() => finish[2]!())]).then(([v]) => v), 5);
  });

  test('with minIntervalMs, a steady stream waits out the interval for a free slot, a full batch and a call after a quiet spell do not', async () => {
    const { queue, batches, finish } = controlledQueue({ maxBatch: 4, maxInFlight: 2, minIntervalMs: 80 });
    const first = queue.submit(1);
    await turn();
    assert.deepEqual(batches, [[1]], 'the first call after a quiet spell goes at once');
    const stream = [2, 3].map((i) => queue.submit(i));
    await turn();
    assert.equal(batches.length, 1, 'a slot is free, but the interval since the last start has not passed');
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(batches[1], [2, 3], 'they went together once it passed');
    const full = [4, 5, 6, 7].map((i) => queue.submit(i));
    assert.equal(batches.length, 2, 'both slots are busy');
    finish[0]!();
    await first;
    await turn();
    assert.deepEqual(batches[2], [4, 5, 6, 7], 'a full batch goes as soon as a slot frees, inside the interval');
    finish[1]!();
    finish[2]!();
    assert.deepEqual(await Promise.all([...stream, ...full]), [20, 30, 40, 50, 60, 70]);
    await new Promise((r) => setTimeout(r, 100));
    const late = queue.submit(8);
    await turn();
    assert.deepEqual(batches[3], [8], 'after a quiet spell, at once again');
    finish[3]!();
    assert.equal(await late, 80);
  });

  test('with minIntervalMs, calls held for the interval go at the end of the turn once they fill a batch', async () => {
    const { queue, batches, finish } = controlledQueue({ maxBatch: 3, maxInFlight: 2, minIntervalMs: 10_000 });
    const first = queue.submit(1);
    await turn();
    const held = [2, 3].map((i) => queue.submit(i));
    await turn();
    assert.equal(batches.length, 1, 'held: a slot is free, the interval has not passed');
    const filling = queue.submit(4);
    await turn();
    assert.deepEqual(batches[1], [2, 3, 4], 'the third call filled the batch: it went without waiting out the interval');
    finish[0]!();
    finish[1]!();
    assert.deepEqual(await Promise.all([first, ...held, filling]), [10, 20, 30, 40]);
  });

  test('maxBatch and maxInFlight below 1 are refused', () => {
    const run = async () => [];
    assert.throws(() => createBatchQueue({ maxBatch: 0, maxInFlight: 1, run }));
    assert.throws(() => createBatchQueue({ maxBatch: 1, maxInFlight: 0, run }));
  });
});
