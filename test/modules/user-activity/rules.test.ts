import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  closeTransition,
  durationSeconds,
  inactivityCutoff,
  isIdle,
  linkDecision,
  NotActiveError,
  stuckCutoff,
} from '../../../src/modules/user-activity/rules.ts';
import { MINUTE_MS } from '../../../src/platform/time.ts';
import {
  propertyObjectViewEndedEvent,
  sessionEndedEvent,
  type ClosedSession,
  type ClosedView,
} from '../../../src/modules/user-activity/events.ts';
import { retentionCutoff } from '../../../src/modules/user-activity/retention/activity-retention.ts';
import { TOPICS } from '../../../src/event-topics.ts';

const at = (iso: string) => new Date(iso);

describe('close transition', () => {
  test('Duration = LastActivityAt − CreatedAt in whole seconds, EndedAt = now, Active → Inactive', () => {
    const now = at('2026-01-01T12:30:00Z');
    const t = closeTransition(
      { id: 's1', status: 'Active', createdAt: at('2026-01-01T12:00:00.000Z'), lastActivityAt: at('2026-01-01T12:05:09.999Z') },
      now,
    );
    assert.deepEqual(t, { id: 's1', status: 'Inactive', endedAt: now, durationSeconds: 309 });
  });

  test('the tail after the last heartbeat is not counted (EndedAt does not enter the duration)', () => {
    const row = { id: 'v', status: 'Active', createdAt: at('2026-01-01T00:00:00Z'), lastActivityAt: at('2026-01-01T00:01:00Z') };
    assert.equal(closeTransition(row, at('2026-01-01T00:20:00Z')).durationSeconds, 60);
    assert.equal(closeTransition(row, at('2026-01-01T05:00:00Z')).durationSeconds, 60);
  });

  test('guard Status == Active: an Inactive row is never closed a second time', () => {
    assert.throws(
      () => closeTransition({ id: 'x', status: 'Inactive', createdAt: new Date(0), lastActivityAt: new Date(0) }, new Date()),
      NotActiveError,
    );
  });

  test('a negative duration is surfaced (left to chk_*_duration_nonneg), not clamped to zero', () => {
    assert.equal(durationSeconds(at('2026-01-01T00:00:10Z'), at('2026-01-01T00:00:00Z')), -10);
  });
});

describe('inactivity cutoffs', () => {
  const now = at('2026-01-01T12:00:00Z');
  test('cutoff = now − threshold; a row is idle only when strictly older than the cutoff', () => {
    const cutoff = inactivityCutoff(now, 12 * MINUTE_MS);
    assert.equal(cutoff.toISOString(), '2026-01-01T11:48:00.000Z');
    assert.equal(isIdle(at('2026-01-01T11:47:59.999Z'), cutoff), true);
    assert.equal(isIdle(cutoff, cutoff), false);
  });

  test('the stuck-backlog line is 2 × threshold back', () => {
    assert.equal(stuckCutoff(now, 12 * MINUTE_MS).toISOString(), '2026-01-01T11:36:00.000Z');
  });
});

describe('link decision', () => {
  test('guest session is linked, same user stays, another user is switched', () => {
    assert.equal(linkDecision(null, 'u1'), 'link');
    assert.equal(linkDecision('u1', 'u1'), 'already-linked');
    assert.equal(linkDecision('u2', 'u1'), 'switch');
  });
});

describe('event payloads (seed 001 step 6)', () => {
  const session: ClosedSession = {
    id: '0190a000-0000-7000-8000-000000000001',
    anonymousId: 'anon-1',
    userId: null,
    createdAt: at('2026-01-01T10:00:00Z'),
    lastActivityAt: at('2026-01-01T10:30:00Z'),
    endedAt: at('2026-01-01T10:45:00Z'),
    durationSeconds: 1800,
  };
  const view: ClosedView = {
    id: '0190a000-0000-7000-8000-000000000002',
    sessionId: session.id,
    propertyObjectId: '0190a000-0000-7000-8000-000000000003',
    viewSource: 'Catalog',
    filterSnapshot: undefined,
    createdAt: at('2026-01-01T10:10:00Z'),
    lastActivityAt: at('2026-01-01T10:20:00Z'),
    endedAt: at('2026-01-01T10:45:00Z'),
    durationSeconds: 600,
  };

  test('SessionEnded: topic, type, version 1, aggregate Session keyed by SessionId, exactly the contract fields', () => {
    const e = sessionEndedEvent(session, 'run-1');
    assert.equal(e.topic, TOPICS.sessionEnded);
    assert.equal(e.eventType, 'SessionEndedKafkaEvent');
    assert.equal(e.contractVersion, 1);
    assert.equal(e.aggregateType, 'Session');
    assert.equal(e.aggregateId, session.id);
    assert.equal(e.correlationId, 'run-1');
    assert.deepEqual(e.occurredAt, session.endedAt);
    assert.deepEqual(e.payload, {
      SessionId: session.id,
      AnonymousId: 'anon-1',
      UserId: null,
      CreatedAt: '2026-01-01T10:00:00.000Z',
      LastActivityAt: '2026-01-01T10:30:00.000Z',
      DurationSeconds: 1800,
    });
  });

  test('PropertyObjectViewEnded: UserId and AnonymousId come from the session, ViewedAt = CreatedAt, no device data', () => {
    const e = propertyObjectViewEndedEvent(view, { anonymousId: 'anon-1', userId: '0190a000-0000-7000-8000-0000000000aa' }, null);
    assert.equal(e.topic, TOPICS.propertyObjectViewEnded);
    assert.equal(e.eventType, 'PropertyObjectViewEndedKafkaEvent');
    assert.equal(e.aggregateType, 'PropertyObjectView');
    assert.equal(e.aggregateId, view.id);
    assert.deepEqual(e.payload, {
      PropertyObjectViewId: view.id,
      PropertyObjectId: view.propertyObjectId,
      SessionId: session.id,
      AnonymousId: 'anon-1',
      UserId: '0190a000-0000-7000-8000-0000000000aa',
      ViewSource: 'Catalog',
      ViewedAt: '2026-01-01T10:10:00.000Z',
      LastActivityAt: '2026-01-01T10:20:00.000Z',
      DurationSeconds: 600,
      FilterSnapshot: null,
    });
    assert.doesNotMatch(JSON.stringify(e.payload), /IpAddress|UserAgent/);
  });
});

test('retention cutoff is N calendar months back (UTC)', () => {
  assert.equal(retentionCutoff(at('2026-03-15T08:00:00Z'), 12).toISOString(), '2025-03-15T08:00:00.000Z');
  assert.equal(retentionCutoff(at('2026-03-15T08:00:00Z'), 1).toISOString(), '2026-02-15T08:00:00.000Z');
});
