import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { tickBatcher } from '../../../src/platform/realtime/tick-batch.ts';

/** tickBatcher: the lookups of one event-loop turn share one load; nothing outlives its batch. */

const turn = () => new Promise((r) => setImmediate(r));

describe('tickBatcher', () => {
  test('lookups of one turn share one load; each gets its own answer, a key the load does not know gets the default', async () => {
    const loads: string[][] = [];
    const lookup = tickBatcher(
      async (keys: string[]) => {
        loads.push(keys);
        return new Map(keys.filter((k) => k !== 'x').map((k) => [k, k.toUpperCase()]));
      },
      { missing: 'none' },
    );
    const answers = await Promise.all(['a', 'b', 'a', 'x', 'c'].map(lookup));
    assert.deepEqual(answers, ['A', 'B', 'A', 'none', 'C']);
    assert.deepEqual(loads, [['a', 'b', 'x', 'c']]);
  });

  test('a lookup in a later turn is loaded again: an answer is never older than its question', async () => {
    let version = 1;
    let loads = 0;
    const lookup = tickBatcher(
      async (keys: string[]) => {
        loads++;
        return new Map(keys.map((k) => [k, version]));
      },
      { missing: 0 },
    );
    assert.equal(await lookup('k'), 1);
    version = 2;
    await turn();
    assert.equal(await lookup('k'), 2);
    assert.equal(loads, 2);
  });

  test('lookups made while a load runs wait for it and share the next load, which starts after they were asked', async () => {
    const loads: string[][] = [];
    let release!: () => void;
    const lookup = tickBatcher(
      async (keys: string[]) => {
        loads.push(keys);
        if (loads.length === 1) await new Promise<void>((r) => (release = r));
        return new Map(keys.map((k) => [k, loads.length]));
      },
      { missing: 0 },
    );
    const first = lookup('a');
    await turn();
    await turn();
    const later = [lookup('b'), lookup('c'), lookup('a')];
    await turn();
    await turn();
    assert.deepEqual(loads, [['a']], 'nothing new starts while the first load runs');
    release();
    assert.equal(await first, 1);
    assert.deepEqual(await Promise.all(later), [2, 2, 2], 'answered by the load that started after they were asked');
    assert.deepEqual(loads, [['a'], ['b', 'c', 'a']]);
  });

  test('a failed load rejects the lookups of its batch only', async () => {
    let fail = true;
    const lookup = tickBatcher(
      async (keys: string[]) => {
        if (fail) throw new Error('down');
        return new Map(keys.map((k) => [k, true]));
      },
      { missing: false },
    );
    const first = await Promise.allSettled([lookup('a'), lookup('b')]);
    assert.deepEqual(first.map((r) => r.status), ['rejected', 'rejected']);
    fail = false;
    assert.equal(await lookup('a'), true);
  });

  test('a batch past maxBatch keys is loaded in slices of at most maxBatch', async () => {
    const sizes: number[] = [];
    const lookup = tickBatcher(
      async (keys: number[]) => {
        sizes.push(keys.length);
        return new Map(keys.map((k) => [k, k * 2]));
      },
      { missing: -1, maxBatch: 4 },
    );
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => lookup(i)));
    assert.deepEqual(answers, Array.from({ length: 10 }, (_, i) => i * 2));
    assert.deepEqual(sizes, [4, 4, 2]);
  });
});
