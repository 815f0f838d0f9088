import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../../src/platform/http/errors.ts';
import { toE164 } from '../../../src/modules/identity/users/phone.ts';
import { applyUserPatch, newUser, normalizeName, userChangeEvents, userUpsertedPayload, type User } from '../../../src/modules/identity/users/users.ts';
import { chooseFanOut, normalizePermissions, samePermissions } from '../../../src/modules/identity/roles/roles.ts';
import {
  accessChangedEvent,
  checkGrant,
  isActiveAt,
  nextAssignmentVersion,
  normalizeScope,
} from '../../../src/modules/identity/assignments/assignments.ts';
import { isLastPage, retryAt, retryBackoff, shouldSplit, subTaskRanges } from '../../../src/modules/identity/access-fanout/fanout-rules.ts';
import { IDENTITY_DEFAULTS } from '../../../src/modules/identity/defaults.ts';
import { backoffProblems } from '../../../src/platform/backoff/index.ts';
import { configProblems } from '../../support/config.ts';

const now = new Date('2026-03-01T12:00:00Z');
const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof AppError, `expected an AppError, got ${String(err)}`);
    return err.code;
  }
  assert.fail('expected an error');
};

describe('phone numbers', () => {
  test('common notations become E.164; a number without + is read in the default region', () => {
    assert.equal(toE164('+7 999 123-45-67', 'RU'), '+79991234567');
    assert.equal(toE164('8 (999) 123 45 67', 'RU'), '+79991234567');
    assert.equal(toE164('+1 202 555 0143', 'RU'), '+12025550143');
  });

  test('too short, unassigned or non-numeric input is refused', () => {
    assert.equal(toE164('+7 123', 'RU'), null);
    assert.equal(toE164('not a phone', 'RU'), null);
    assert.equal(toE164('+7 000 000 00 00', 'RU'), null);
  });
});

describe('users', () => {
  const base = (): User =>
    newUser(
      { name: { firstName: ' Иван ', middleName: '', lastName: 'Петров' }, phoneNumber: '+79991234567' },
      { id: '0190a000-0000-7000-8000-000000000001', now, phoneRegion: 'RU' },
    );

  test('a new user starts at Version 1, Active, Investor, with a trimmed name and no empty middle name', () => {
    const u = base();
    assert.equal(u.version, 1);
    assert.equal(u.status, 'Active');
    assert.equal(u.type, 'Investor');
    assert.deepEqual([u.firstName, u.middleName, u.lastName], ['Иван', null, 'Петров']);
  });

  test('an empty first name and an invalid phone are refused with their codes', () => {
    assert.equal(code(() => normalizeName({ firstName: '  ', lastName: 'x' })), 'IDENTITY_INVALID_NAME');
    assert.equal(
      code(() => newUser({ name: { firstName: 'a', lastName: '' }, phoneNumber: '12' }, { id: 'x', now, phoneRegion: 'RU' })),
      'IDENTITY_INVALID_PHONE',
    );
  });

  test('a patch that changes something bumps Version by one; one that changes nothing keeps it', () => {
    const u = base();
    const later = new Date(now.getTime() + 1000);
    const changed = applyUserPatch(u, { status: 'Blocked', phoneNumber: '8 999 765 43 21' }, { now: later, phoneRegion: 'RU' });
    assert.equal(changed.changed, true);
    assert.equal(changed.user.version, 2);
    assert.equal(changed.user.phoneNumber, '+79997654321');
    assert.equal(changed.user.updatedAt, later);
    const same = applyUserPatch(u, { name: { firstName: 'Иван', lastName: 'Петров' }, phoneNumber: '+7 999 123 45 67' }, { now: later, phoneRegion: 'RU' });
    assert.equal(same.changed, false);
    assert.equal(same.user.version, 1);
  });

  test('the UserUpserted payload carries the seed 002 fields in PascalCase', () => {
    const u = { ...base(), companyId: '0190a000-0000-7000-8000-0000000000cc' };
    assert.deepEqual(userUpsertedPayload(u), {
      UserId: u.id,
      Name: { FirstName: 'Иван', MiddleName: null, LastName: 'Петров' },
      PhoneNumber: '+79991234567',
      Status: 'Active',
      Version: 1,
      Type: 'Investor',
      CompanyId: u.companyId,
    });
  });

  test('entering Blocked announces UserBlocked beside the snapshot; staying Blocked does not', () => {
    const u = base();
    const blocked = applyUserPatch(u, { status: 'Blocked' }, { now, phoneRegion: 'RU' }).user;
    assert.deepEqual(userChangeEvents(u, blocked).map((e) => e.eventType), ['UserUpsertedKafkaEvent', 'UserBlockedKafkaEvent']);
    const renamed = applyUserPatch(blocked, { name: { firstName: 'Пётр', lastName: '' } }, { now, phoneRegion: 'RU' }).user;
    assert.deepEqual(userChangeEvents(blocked, renamed).map((e) => e.eventType), ['UserUpsertedKafkaEvent']);
    const [e] = userChangeEvents(null, u);
    assert.equal(e!.topic, 'pin.identity.users.v1');
    assert.equal(e!.key, u.id);
    assert.equal(e!.aggregateType, 'User');
  });
});

describe('roles', () => {
  test('permission sets are trimmed, deduplicated and sorted, so equal sets compare equal', () => {
    const a = normalizePermissions(['crm.deals.write', ' crm.deals.read', 'crm.deals.write']);
    assert.deepEqual(a, ['crm.deals.read', 'crm.deals.write']);
    assert.ok(samePermissions(a, normalizePermissions(['crm.deals.read', 'crm.deals.write'])));
    assert.ok(!samePermissions(a, ['crm.deals.read']));
  });

  test('a malformed permission code is refused', () => {
    assert.equal(code(() => normalizePermissions(['Crm Deals'])), 'IDENTITY_INVALID_PERMISSION');
  });

  test('inline fan-out up to and including the threshold, queued above it', () => {
    assert.equal(chooseFanOut(0, 500), 'inline');
    assert.equal(chooseFanOut(500, 500), 'inline');
    assert.equal(chooseFanOut(501, 500), 'queued');
  });
});

describe('assignments', () => {
  const org = '0190a000-0000-7000-8000-0000000000aa';

  test('each scope type takes exactly its own scope id', () => {
    assert.deepEqual(normalizeScope({ scopeType: 'Organization', scopeOrganizationId: org }), {
      scopeType: 'Organization',
      scopeOrganizationId: org,
      scopeProjectGroupId: null,
      scopeProjectId: null,
    });
    assert.equal(normalizeScope({ scopeType: 'Platform' }).scopeOrganizationId, null);
    assert.equal(code(() => normalizeScope({ scopeType: 'Project' })), 'IDENTITY_INVALID_SCOPE');
    assert.equal(code(() => normalizeScope({ scopeType: 'Platform', scopeProjectId: org })), 'IDENTITY_INVALID_SCOPE');
    assert.equal(code(() => normalizeScope({ scopeType: 'Project', scopeProjectId: org, scopeOrganizationId: org })), 'IDENTITY_INVALID_SCOPE');
  });

  test('grant guards: archived role, company role to another company, expiry in the past', () => {
    const role = { id: 'r', status: 'Active' as const, companyId: org };
    assert.doesNotThrow(() => checkGrant({ role, user: { companyId: org }, expiresAt: null, now }));
    assert.doesNotThrow(() => checkGrant({ role: { ...role, companyId: null }, user: { companyId: null }, expiresAt: null, now }));
    assert.equal(code(() => checkGrant({ role: { ...role, status: 'Archived' }, user: { companyId: org }, expiresAt: null, now })), 'IDENTITY_ROLE_ARCHIVED');
    assert.equal(code(() => checkGrant({ role, user: { companyId: null }, expiresAt: null, now })), 'IDENTITY_ROLE_COMPANY_MISMATCH');
    assert.equal(code(() => checkGrant({ role, user: { companyId: org }, expiresAt: now, now })), 'IDENTITY_ASSIGNMENT_EXPIRES_IN_PAST');
  });

  test('an assignment past ExpiresAt is not active even while its status is still Active', () => {
    assert.equal(isActiveAt({ status: 'Active', expiresAt: null }, now), true);
    assert.equal(isActiveAt({ status: 'Active', expiresAt: new Date(now.getTime() + 1) }, now), true);
    assert.equal(isActiveAt({ status: 'Active', expiresAt: now }, now), false);
    assert.equal(isActiveAt({ status: 'Revoked', expiresAt: null }, now), false);
  });

  test("the assignment axis version is one above the user's highest", () => {
    assert.equal(nextAssignmentVersion(null), 1);
    assert.equal(nextAssignmentVersion(7), 8);
  });

  test('UserAccessChanged: topic, key = UserId, AggregateType User, PascalCase snapshot with null scope ids', () => {
    const e = accessChangedEvent(
      {
        userId: 'u1',
        companyId: org,
        activeAssignments: [
          {
            assignmentId: 'a1',
            roleId: 'r1',
            roleCode: 'sales',
            scopeType: 'Organization',
            scopeOrganizationId: org,
            scopeProjectGroupId: null,
            scopeProjectId: null,
            expiresAt: new Date('2026-04-01T00:00:00Z'),
          },
        ],
      },
      { reason: 'RolePermissionsChanged', version: 4, occurredAt: now, correlationId: 'run-1' },
    );
    assert.equal(e.topic, 'pin.identity.access.v1');
    assert.equal(e.key, 'u1');
    assert.equal(e.aggregateType, 'User');
    assert.equal(e.eventType, 'UserAccessChangedKafkaEvent');
    assert.deepEqual(e.payload, {
      UserId: 'u1',
      CompanyId: org,
      ChangeReason: 'RolePermissionsChanged',
      Version: 4,
      ActiveAssignments: [
        {
          AssignmentId: 'a1',
          RoleId: 'r1',
          RoleCode: 'sales',
          ScopeType: 'Organization',
          ScopeOrganizationId: org,
          ScopeProjectGroupId: null,
          ScopeProjectId: null,
          ExpiresAt: '2026-04-01T00:00:00.000Z',
        },
      ],
    });
  });
});

describe('fan-out rules', () => {
  test('a short page is the last one; a full page asks for another', () => {
    assert.equal(isLastPage(0, 500), true);
    assert.equal(isLastPage(499, 500), true);
    assert.equal(isLastPage(500, 500), false);
  });

  test('settings the worker cannot run with are refused (by loadConfig; the retry backoff is fixed and sound)', () => {
    const refused = (env: Record<string, string>) => configProblems(env).join('; ');
    const ok = { IDENTITY_ACCESS_FANOUT_BATCH_SIZE: '500', IDENTITY_ACCESS_FANOUT_MAX_ATTEMPTS: '5', IDENTITY_ACCESS_FANOUT_MAX_LEASE_DURATION: '5m', IDENTITY_ACCESS_FANOUT_POLLING_INTERVAL: '5s' };
    assert.equal(refused(ok), '');
    assert.match(refused({ ...ok, IDENTITY_ACCESS_FANOUT_BATCH_SIZE: '0' }), /IDENTITY_ACCESS_FANOUT_BATCH_SIZE/);
    assert.match(refused({ ...ok, IDENTITY_ACCESS_FANOUT_MAX_ATTEMPTS: '0' }), /IDENTITY_ACCESS_FANOUT_MAX_ATTEMPTS/);
    assert.deepEqual(backoffProblems(retryBackoff({ retryBaseMs: IDENTITY_DEFAULTS.fanOutRetryBaseMs, retryCapMs: IDENTITY_DEFAULTS.fanOutRetryCapMs })), []);
    assert.match(backoffProblems(retryBackoff({ retryBaseMs: 5000, retryCapMs: 1000 })).join(), /cap must be ≥ base/);
    // The range size is a fixed constant now: the old setting, whatever its value, stops start-up naming it.
    assert.match(refused({ ...ok, IDENTITY_ACCESS_FANOUT_RANGE_SIZE: '0' }), /IDENTITY_ACCESS_FANOUT_RANGE_SIZE: removed .*IDENTITY_DEFAULTS\.fanOutRangeSize = 5000/);
  });

  test('a large role splits once, on its queued task\'s first page, into ranges between the boundaries, the last one open-ended', () => {
    assert.equal(shouldSplit({ parentId: null }, { cursor: null, rangeEnd: null }), true);
    assert.equal(shouldSplit({ parentId: 'p' }, { cursor: null, rangeEnd: null }), false, 'a sub-task never splits');
    assert.equal(shouldSplit({ parentId: null }, { cursor: 'c', rangeEnd: null }), false, 'past the first page');
    assert.equal(shouldSplit({ parentId: null }, { cursor: null, rangeEnd: 'b1' }), false, 'already narrowed');
    assert.deepEqual(subTaskRanges(['b1', 'b2', 'b3']), [
      { after: 'b1', upTo: 'b2' },
      { after: 'b2', upTo: 'b3' },
      { after: 'b3', upTo: null },
    ]);
    assert.deepEqual(subTaskRanges([]), []);
  });

  test('a failed page is retried after the kernel backoff from the retry base, doubling per attempt up to the cap, never the lease', () => {
    const s = { retryBaseMs: 1000, retryCapMs: 60_000 };
    const now = new Date('2026-03-01T09:00:00Z');
    const delay = (attempt: number, r = 0) => retryAt(now, attempt, s, () => r).getTime() - now.getTime();
    assert.deepEqual([1, 2, 3, 7, 20].map((a) => delay(a)), [1000, 2000, 4000, 60_000, 60_000]);
    assert.equal(delay(1, 1), 1200, 'jitter lengthens by up to 20 %');
  });
});
