import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';

/**
 * Pure rules of the user replica (seed 002): reading a UserUpserted payload, E.164 normalisation,
 * the fail-closed status mapping, name truncation, the version guard (INV-MU-1) and the phone
 * conflict decision (INV-MU-2). No I/O: the consumer feeds them rows and writes what they return.
 */

export const USER_SYNC_ERRORS = {
  /** The phone cannot be brought to E.164 (a producer anomaly): DLQ + alert, no retry. */
  invalidPhone: 'MSG_USER_SYNC_INVALID_PHONE',
  /** A required field is missing or of the wrong type (a producer anomaly): DLQ, no retry. */
  invalidPayload: 'MSG_USER_SYNC_INVALID_PAYLOAD',
  /** Logged and counted, never dead-lettered: the phone stays with the live row holding it. */
  phoneConflict: 'MSG_USER_PHONE_CONFLICT',
} as const;

export const NAME_MAX_LENGTH = 128;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A rule violation that no retry can fix; the consumer turns it into a PoisonMessageError. */
export class UserSyncRejection extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'UserSyncRejection';
    this.code = code;
  }
}

/** A snapshot ready to apply: names truncated, phone in E.164, status mapped. */
export interface UserSnapshot {
  userId: string;
  firstName: string;
  middleName: string | null;
  lastName: string;
  phoneNumber: string;
  isActive: boolean;
  version: number;
  /** Name fields cut to NAME_MAX_LENGTH (logged as a warning). */
  truncated: string[];
}

/** E.164 ("+79991234567") of a number as a producer or a person wrote it, or null when invalid. */
export function toE164(input: string, defaultRegion: string): string | null {
  if (input.length > 40) return null;
  const parsed = parsePhoneNumberFromString(input, defaultRegion as CountryCode);
  if (!parsed || !parsed.isValid()) return null;
  return parsed.number;
}

/** IsActive = Status ∈ {Invited, Active}; Blocked, Archived and anything unknown → false (fail closed). */
export function isActiveStatus(status: unknown): boolean {
  return status === 'Invited' || status === 'Active';
}

/** Cuts a name to `max` characters (code points, as PostgreSQL varchar counts them). */
export function truncateName(value: string, max = NAME_MAX_LENGTH): { value: string; truncated: boolean } {
  const chars = [...value];
  return chars.length <= max ? { value, truncated: false } : { value: chars.slice(0, max).join(''), truncated: true };
}

const reject = (why: string) => new UserSyncRejection(USER_SYNC_ERRORS.invalidPayload, `UserUpsertedKafkaEvent ${why}`);

/**
 * Reads the fields of UserUpsertedKafkaEvent the replica uses (UserId, Name, PhoneNumber, Status,
 * Version); Type, CompanyId, RegisteredVia and ReferrerUrl are ignored. Throws UserSyncRejection
 * with a message free of personal data (it lands in the DLQ headers).
 */
/**
 * UserId and Version as the seed's log lines name them, read from a payload not validated yet
 * (a duplicate is never read, a failed one may be invalid): only a bounded string and a number.
 */
export function payloadIds(payload: unknown): { userId?: string; version?: number } {
  const p = payload !== null && typeof payload === 'object' ? (payload as { UserId?: unknown; Version?: unknown }) : {};
  return {
    ...(typeof p.UserId === 'string' ? { userId: p.UserId.slice(0, 64) } : {}),
    ...(typeof p.Version === 'number' && Number.isFinite(p.Version) ? { version: p.Version } : {}),
  };
}

export function readUserSnapshot(payload: unknown, defaultRegion: string): UserSnapshot {
  if (!payload || typeof payload !== 'object' || Array.isArray(payload)) throw reject('payload is not an object');
  const p = payload as Record<string, unknown>;
  if (typeof p.UserId !== 'string' || !UUID.test(p.UserId)) throw reject('UserId is missing or not a UUID');
  const name = p.Name as Record<string, unknown> | null | undefined;
  if (!name || typeof name !== 'object') throw reject('Name is missing');
  if (typeof name.FirstName !== 'string' || name.FirstName.trim() === '') throw reject('Name.FirstName is missing or empty');
  if (typeof name.LastName !== 'string') throw reject('Name.LastName is missing (an empty string is allowed)');
  if (name.MiddleName !== undefined && name.MiddleName !== null && typeof name.MiddleName !== 'string') {
    throw reject('Name.MiddleName is not a string');
  }
  if (typeof p.PhoneNumber !== 'string' || p.PhoneNumber.trim() === '') throw reject('PhoneNumber is missing or empty');
  if (typeof p.Status !== 'string') throw reject('Status is missing');
  if (typeof p.Version !== 'number' || !Number.isSafeInteger(p.Version) || p.Version < 1) throw reject('Version is not an integer >= 1');

  const phoneNumber = toE164(p.PhoneNumber.trim(), defaultRegion);
  if (!phoneNumber) throw new UserSyncRejection(USER_SYNC_ERRORS.invalidPhone, 'PhoneNumber cannot be normalised to E.164');

  const truncated: string[] = [];
  const cut = (field: string, value: string) => {
    const t = truncateName(value);
    if (t.truncated) truncated.push(field);
    return t.value;
  };
  const middle = typeof name.MiddleName === 'string' ? name.MiddleName.trim() : '';
  return {
    userId: p.UserId.toLowerCase(),
    firstName: cut('FirstName', name.FirstName.trim()),
    middleName: middle === '' ? null : cut('MiddleName', middle),
    lastName: cut('LastName', name.LastName.trim()),
    phoneNumber,
    isActive: isActiveStatus(p.Status),
    version: p.Version,
    truncated,
  };
}

/** What the replica holds for the user now. */
export interface ReplicaState {
  phoneNumber: string | null;
  isActive: boolean;
  version: number;
}

/** A snapshot applies only over an older one (INV-MU-1); equal or lower = stale, duplicate or out of order. */
export const isStale = (existing: ReplicaState | null, version: number): boolean => existing !== null && version <= existing.version;

/** Other live (active) rows holding the phones in play, as read in the applying transaction. */
export interface PhoneHolders {
  /** Holder of the snapshot's phone. */
  ofIncoming: string | null;
  /** Holder of the phone the replica row has now (relevant when it is not live yet). */
  ofCurrent: string | null;
}

export interface PhoneDecision {
  /** The phone to write. */
  phoneNumber: string | null;
  /** Set when the snapshot's phone is held by another live row (INV-MU-2). */
  conflict: { phoneNumber: string; holderUserId: string | null } | null;
}

/**
 * A phone is unique among live rows (INV-MU-2). A snapshot whose phone another live row holds gets
 * its names, IsActive and Version applied but not the phone: the row keeps its current phone when
 * that one stays unique, else none (a user first seen with a taken phone has none). A row that is
 * not live cannot collide, so it takes its phone as is. `forceNoPhone` is the last resort when
 * concurrent writers keep taking the phones in play.
 */
export function decidePhone(
  snapshot: Pick<UserSnapshot, 'phoneNumber' | 'isActive'>,
  existing: ReplicaState | null,
  holders: PhoneHolders,
  forceNoPhone = false,
): PhoneDecision {
  if (!snapshot.isActive) return { phoneNumber: snapshot.phoneNumber, conflict: null };
  if (!holders.ofIncoming && !forceNoPhone) return { phoneNumber: snapshot.phoneNumber, conflict: null };
  const current = existing?.phoneNumber ?? null;
  const keepCurrent = !forceNoPhone && current !== null && current !== snapshot.phoneNumber && !holders.ofCurrent;
  return {
    phoneNumber: keepCurrent ? current : null,
    conflict: { phoneNumber: snapshot.phoneNumber, holderUserId: holders.ofIncoming },
  };
}

/**
 * The phone a live row lets go of with this write (it changes phone or stops being live), which
 * an open conflict of another user may now take; null when nothing is released.
 */
export function releasedPhone(existing: ReplicaState | null, next: { phoneNumber: string | null; isActive: boolean }): string | null {
  if (!existing || !existing.isActive || existing.phoneNumber === null) return null;
  return next.isActive && next.phoneNumber === existing.phoneNumber ? null : existing.phoneNumber;
}

/**
 * True when the write may hit the live-phone unique index because a concurrent writer took the
 * phone after we read: the row becomes live with a phone it did not hold live before.
 */
export function mayCollide(existing: ReplicaState | null, next: { phoneNumber: string | null; isActive: boolean }): boolean {
  if (!next.isActive || next.phoneNumber === null) return false;
  return !(existing?.isActive && existing.phoneNumber === next.phoneNumber);
}

/** The last name is masked ("И***") until the viewer's contact with the user is Accepted (INV-MU-3). */
export function maskLastName(lastName: string): string {
  return lastName === '' ? '' : `${[...lastName][0]}***`;
}
