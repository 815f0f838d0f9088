import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { maskName, maskPhone } from '../../../../src/platform/observability/logger.ts';
import {
  USER_SYNC_ERRORS,
  UserSyncRejection,
  decidePhone,
  isActiveStatus,
  isStale,
  maskLastName,
  mayCollide,
  readUserSnapshot,
  releasedPhone,
  toE164,
  truncateName,
} from '../../../../src/modules/messenger/user-replica/rules.ts';
import { backoffDelayMs } from '../../../../src/platform/backoff/index.ts';
import { indexRetryBackoff } from '../../../../src/modules/messenger/contact-search/indexer.job.ts';

const USER = '0190a8b2-0000-7000-8000-000000000001';
const payload = (over: Record<string, unknown> = {}) => ({
  UserId: USER,
  Name: { FirstName: 'Иван', MiddleName: 'Петрович', LastName: 'Иванов' },
  PhoneNumber: '+79991234567',
  Status: 'Active',
  Version: 3,
  Type: 'Investor',
  CompanyId: null,
  ...over,
});

const rejectedWith = (code: string) => (err: unknown) => err instanceof UserSyncRejection && err.code === code;

describe('reading a UserUpserted payload', () => {
  test('maps the read fields and ignores Type/CompanyId/RegisteredVia/ReferrerUrl', () => {
    const s = readUserSnapshot(payload({ RegisteredVia: 'x', ReferrerUrl: 'y' }), 'RU');
    assert.deepEqual(s, {
      userId: USER,
      firstName: 'Иван',
      middleName: 'Петрович',
      lastName: 'Иванов',
      phoneNumber: '+79991234567',
      isActive: true,
      version: 3,
      truncated: [],
    });
  });

  test('an empty LastName is accepted; an empty MiddleName means none', () => {
    const s = readUserSnapshot(payload({ Name: { FirstName: 'Иван', MiddleName: '', LastName: '' } }), 'RU');
    assert.equal(s.lastName, '');
    assert.equal(s.middleName, null);
  });

  test('a FirstName longer than 128 characters is truncated and reported', () => {
    const long = 'Я'.repeat(130);
    const s = readUserSnapshot(payload({ Name: { FirstName: long, MiddleName: null, LastName: 'Л'.repeat(200) } }), 'RU');
    assert.equal([...s.firstName].length, 128);
    assert.equal([...s.lastName].length, 128);
    assert.deepEqual(s.truncated, ['FirstName', 'LastName']);
  });

  test('truncation counts characters, not UTF-16 units (an emoji is one character)', () => {
    assert.deepEqual(truncateName('😀'.repeat(3), 2), { value: '😀😀', truncated: true });
    assert.deepEqual(truncateName('ab', 2), { value: 'ab', truncated: false });
  });

  test('the phone is normalised to E.164', () => {
    assert.equal(readUserSnapshot(payload({ PhoneNumber: '+7 (999) 123-45-67' }), 'RU').phoneNumber, '+79991234567');
    assert.equal(toE164('8 999 123 45 67', 'RU'), '+79991234567');
  });

  test('a phone that cannot be brought to E.164 is MSG_USER_SYNC_INVALID_PHONE', () => {
    for (const bad of ['+7999', 'not a phone', '+70000000000', '1'.repeat(41)]) {
      assert.throws(() => readUserSnapshot(payload({ PhoneNumber: bad }), 'RU'), rejectedWith(USER_SYNC_ERRORS.invalidPhone), bad);
    }
  });

  test('missing or mistyped required fields are MSG_USER_SYNC_INVALID_PAYLOAD, with no personal data in the reason', () => {
    const cases: unknown[] = [
      null,
      [],
      'text',
      payload({ UserId: undefined }),
      payload({ UserId: 'not-a-uuid' }),
      payload({ Name: undefined }),
      payload({ Name: { FirstName: '  ', LastName: 'Иванов' } }),
      payload({ Name: { FirstName: 'Иван' } }),
      payload({ Name: { FirstName: 'Иван', LastName: 'Иванов', MiddleName: 5 } }),
      payload({ PhoneNumber: '' }),
      payload({ PhoneNumber: undefined }),
      payload({ Status: undefined }),
      payload({ Version: 0 }),
      payload({ Version: 1.5 }),
      payload({ Version: '3' }),
    ];
    for (const c of cases) {
      assert.throws(
        () => readUserSnapshot(c, 'RU'),
        (err: unknown) => rejectedWith(USER_SYNC_ERRORS.invalidPayload)(err) && !/Иван|7999/.test((err as Error).message),
        JSON.stringify(c),
      );
    }
  });
});

describe('status mapping fails closed', () => {
  test('only Invited and Active are active; Blocked, Archived, unknown and odd values are not', () => {
    assert.equal(isActiveStatus('Invited'), true);
    assert.equal(isActiveStatus('Active'), true);
    for (const s of ['Blocked', 'Archived', 'Deleted', 'active', '', null, undefined, 1]) assert.equal(isActiveStatus(s), false, String(s));
    assert.equal(readUserSnapshot(payload({ Status: 'SomethingNew' }), 'RU').isActive, false);
  });
});

describe('version guard (INV-MU-1)', () => {
  const row = { phoneNumber: '+79991234567', isActive: true, version: 5 };
  test('a first appearance is never stale', () => assert.equal(isStale(null, 1), false));
  test('equal or lower versions are stale; higher ones apply', () => {
    assert.equal(isStale(row, 5), true);
    assert.equal(isStale(row, 4), true);
    assert.equal(isStale(row, 6), false);
  });
});

describe('phone conflict decision (INV-MU-2)', () => {
  const live = { phoneNumber: '+79990000001', isActive: true };
  const noHolders = { ofIncoming: null, ofCurrent: null };
  const other = '0190a8b2-0000-7000-8000-0000000000ff';

  test('no live holder: the phone is applied', () => {
    assert.deepEqual(decidePhone(live, null, noHolders), { phoneNumber: live.phoneNumber, conflict: null });
  });

  test('first appearance with a taken phone: no phone, conflict recorded with the holder', () => {
    assert.deepEqual(decidePhone(live, null, { ofIncoming: other, ofCurrent: null }), {
      phoneNumber: null,
      conflict: { phoneNumber: live.phoneNumber, holderUserId: other },
    });
  });

  test('an existing row asking for a taken phone keeps its own phone', () => {
    const existing = { phoneNumber: '+79990000002', isActive: true, version: 1 };
    assert.deepEqual(decidePhone(live, existing, { ofIncoming: other, ofCurrent: null }).phoneNumber, '+79990000002');
  });

  test('the own phone is not kept when another live row holds it too (a row coming back to life)', () => {
    const existing = { phoneNumber: '+79990000002', isActive: false, version: 1 };
    const d = decidePhone(live, existing, { ofIncoming: other, ofCurrent: other });
    assert.equal(d.phoneNumber, null);
    assert.ok(d.conflict);
  });

  test('an inactive row cannot collide: it takes its phone without a conflict', () => {
    assert.deepEqual(decidePhone({ ...live, isActive: false }, null, { ofIncoming: other, ofCurrent: null }), {
      phoneNumber: live.phoneNumber,
      conflict: null,
    });
  });

  test('the last resort after concurrent writers took the phone: no phone, conflict with an unknown holder', () => {
    const existing = { phoneNumber: '+79990000002', isActive: false, version: 1 };
    assert.deepEqual(decidePhone(live, existing, noHolders, true), {
      phoneNumber: null,
      conflict: { phoneNumber: live.phoneNumber, holderUserId: null },
    });
  });

  test('a live row releases its phone when it changes phone or stops being live', () => {
    const existing = { phoneNumber: '+79990000002', isActive: true, version: 1 };
    assert.equal(releasedPhone(existing, { phoneNumber: '+79990000003', isActive: true }), '+79990000002');
    assert.equal(releasedPhone(existing, { phoneNumber: '+79990000002', isActive: false }), '+79990000002');
    assert.equal(releasedPhone(existing, { phoneNumber: '+79990000002', isActive: true }), null);
    assert.equal(releasedPhone({ ...existing, isActive: false }, { phoneNumber: null, isActive: true }), null);
    assert.equal(releasedPhone(null, { phoneNumber: '+79990000002', isActive: true }), null);
  });

  test('only a row becoming live with a phone it did not hold live may hit the unique index', () => {
    const existing = { phoneNumber: '+79990000002', isActive: true, version: 1 };
    assert.equal(mayCollide(existing, { phoneNumber: '+79990000002', isActive: true }), false);
    assert.equal(mayCollide(existing, { phoneNumber: '+79990000003', isActive: true }), true);
    assert.equal(mayCollide({ ...existing, isActive: false }, { phoneNumber: '+79990000002', isActive: true }), true);
    assert.equal(mayCollide(existing, { phoneNumber: '+79990000003', isActive: false }), false);
    assert.equal(mayCollide(existing, { phoneNumber: null, isActive: true }), false);
  });
});

describe('masking', () => {
  test('logs show +7***1234 and И***', () => {
    assert.equal(maskPhone('+79991231234'), '+7***1234');
    assert.equal(maskName('Иван'), 'И***');
  });
  test('search masks the last name to its first letter (INV-MU-3); an empty one stays empty', () => {
    assert.equal(maskLastName('Иванов'), 'И***');
    assert.equal(maskLastName(''), '');
  });
});

describe('index retry backoff', () => {
  test('1 s, doubling, capped at the maximum', () => {
    assert.deepEqual([0, 1, 2, 5, 6, 30].map((attempts) => backoffDelayMs(indexRetryBackoff(60_000), attempts + 1)), [1000, 2000, 4000, 32_000, 60_000, 60_000]);
  });
});
