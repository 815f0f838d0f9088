import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { planSegment, type BatchState, type KnownRow } from '../../../../src/modules/messenger/user-replica/batch-plan.ts';
import type { UserSnapshot } from '../../../../src/modules/messenger/user-replica/rules.ts';

/**
 * Planning of the user replica's batch path, without I/O: which leading events are written
 * set-based, the one write per user they add up to, and where the single path must take over.
 */

const [A, B, C] = ['0190a8b2-0000-7000-8000-00000000000a', '0190a8b2-0000-7000-8000-00000000000b', '0190a8b2-0000-7000-8000-00000000000c'];
const [P1, P2, P3] = ['+79160000001', '+79160000002', '+79160000003'];

const snap = (userId: string, version: number, phoneNumber: string, isActive = true, firstName = 'Имя'): UserSnapshot => ({
  userId,
  firstName,
  middleName: null,
  lastName: '',
  phoneNumber,
  isActive,
  version,
  truncated: [],
});
const state = (o: { rows?: [string, KnownRow][]; holders?: [string, string][]; wanted?: string[] } = {}): BatchState => ({
  rows: new Map(o.rows ?? []),
  liveHolders: new Map(o.holders ?? []),
  wantedPhones: new Set(o.wanted ?? []),
});
const row = (phoneNumber: string | null, version: number, revision: number, isActive = true): KnownRow => ({ phoneNumber, isActive, version, revision });
const outcomes = (plan: ReturnType<typeof planSegment>) => plan.outcomes.map((o) => `${o.snapshot.userId.slice(-1)}${o.snapshot.version}:${o.outcome}`);

describe('batch plan of the user replica', () => {
  test('creates, updates and stale events of independent users are planned whole, one write per user', () => {
    const plan = planSegment(
      [snap(A, 1, P1), snap(B, 3, P2, true, 'Новое'), snap(C, 2, P3)],
      state({ rows: [[B, row(P2, 2, 5)], [C, row(P3, 2, 7)]], holders: [[P2, B], [P3, C]] }),
    );
    assert.equal(plan.stop, 3);
    assert.deepEqual(outcomes(plan), ['a1:created', 'b3:updated', 'c2:stale']);
    assert.deepEqual(
      plan.writes.map((w) => [w.snapshot.userId, w.writes, w.expectedRevision]),
      [
        [A, 1, null],
        [B, 1, 5],
      ],
    );
  });

  test('a user repeated in the batch is planned in order: later versions apply over earlier ones, older ones are stale', () => {
    const plan = planSegment([snap(A, 1, P1), snap(A, 3, P2), snap(A, 2, P3), snap(A, 3, P3)], state());
    assert.equal(plan.stop, 4);
    assert.deepEqual(outcomes(plan), ['a1:created', 'a3:updated', 'a2:stale', 'a3:stale']);
    assert.equal(plan.writes.length, 1);
    assert.deepEqual([plan.writes[0]!.snapshot.version, plan.writes[0]!.snapshot.phoneNumber, plan.writes[0]!.writes, plan.writes[0]!.expectedRevision], [3, P2, 2, null]);
  });

  test('stops at a phone another live row holds (conflict): the single path decides it', () => {
    const plan = planSegment([snap(A, 1, P1), snap(B, 1, P2), snap(C, 1, P3)], state({ holders: [[P2, C]] }));
    assert.equal(plan.stop, 1);
    assert.deepEqual(outcomes(plan), ['a1:created']);
    assert.deepEqual(plan.writes.map((w) => w.snapshot.userId), [A]);
  });

  test('a live row keeping its own phone, and an inactive row, never stop the plan', () => {
    const plan = planSegment(
      [snap(A, 2, P1), snap(B, 1, P2, false)],
      state({ rows: [[A, row(P1, 1, 1)]], holders: [[P1, A], [P2, C]] }),
    );
    assert.equal(plan.stop, 2);
    assert.deepEqual(outcomes(plan), ['a2:updated', 'b1:created']);
  });

  test('stops at a release of a phone an open conflict waits for (hand-over)', () => {
    const rows: [string, KnownRow][] = [[A, row(P1, 1, 1)]];
    assert.equal(planSegment([snap(A, 2, P2)], state({ rows, holders: [[P1, A]], wanted: [P1] })).stop, 0, 'a phone change');
    assert.equal(planSegment([snap(A, 2, P1, false)], state({ rows, holders: [[P1, A]], wanted: [P1] })).stop, 0, 'blocked');
    assert.equal(planSegment([snap(A, 2, P2)], state({ rows, holders: [[P1, A]] })).stop, 1, 'nobody waits: planned');
  });

  test('stops where two users of the batch move the same phone (the order of their writes matters)', () => {
    // B takes the phone A lets go of.
    const released = planSegment([snap(A, 2, P2), snap(B, 1, P1)], state({ rows: [[A, row(P1, 1, 1)]], holders: [[P1, A]] }));
    assert.equal(released.stop, 1);
    // B asks for the phone A just took.
    const taken = planSegment([snap(A, 1, P1), snap(B, 1, P1)], state());
    assert.equal(taken.stop, 1);
    // A itself taking its phone back is its own business.
    const own = planSegment([snap(A, 2, P2), snap(A, 3, P1)], state({ rows: [[A, row(P1, 1, 1)]], holders: [[P1, A]] }));
    assert.equal(own.stop, 2);
    assert.deepEqual([own.writes[0]!.snapshot.phoneNumber, own.writes[0]!.writes, own.writes[0]!.expectedRevision], [P1, 2, 1]);
  });
});
