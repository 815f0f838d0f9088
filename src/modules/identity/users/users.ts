import type { NewEvent } from '../../../platform/outbox/index.ts';
import { TOPICS } from '../../../event-topics.ts';
import {
  CONTRACT_VERSION,
  USER_AGGREGATE,
  USER_BLOCKED_EVENT,
  USER_UPSERTED_EVENT,
  type UserBlockedKafkaEvent,
  type UserStatus,
  type UserType,
  type UserUpsertedKafkaEvent,
} from '../../../contracts/identity-events.ts';
import { IdentityErrors } from '../errors.ts';
import { toE164 } from './phone.ts';

/** Pure rules of the user registry: input normalisation, patching, the events a change announces. */

export const USER_STATUSES: readonly UserStatus[] = ['Invited', 'Active', 'Blocked', 'Archived'];
export const USER_TYPES: readonly UserType[] = ['Investor', 'CompanyEmployee', 'PlatformStaff'];
export const NAME_MAX = 128;

export interface User {
  id: string;
  firstName: string;
  middleName: string | null;
  lastName: string;
  phoneNumber: string;
  status: UserStatus;
  type: UserType;
  companyId: string | null;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface NameInput {
  firstName: string;
  middleName?: string | null;
  lastName: string;
}

export interface NewUserInput {
  /** Given by the client (an identity provider's `sub`); a new UUIDv7 otherwise. */
  id?: string;
  name: NameInput;
  phoneNumber: string;
  status?: UserStatus;
  type?: UserType;
  companyId?: string | null;
}

export interface UserPatch {
  name?: NameInput;
  phoneNumber?: string;
  status?: UserStatus;
}

type Name = Pick<User, 'firstName' | 'middleName' | 'lastName'>;

/** Trims the parts; the first name must stay non-empty, an empty middle name means none. */
export function normalizeName(input: NameInput): Name {
  const firstName = input.firstName.trim();
  const lastName = input.lastName.trim();
  const middleName = input.middleName?.trim() || null;
  if (firstName === '') throw IdentityErrors.invalidName('name.firstName must not be empty');
  for (const [field, value] of [['firstName', firstName], ['middleName', middleName], ['lastName', lastName]] as const) {
    if (value !== null && [...value].length > NAME_MAX) throw IdentityErrors.invalidName(`name.${field} is longer than ${NAME_MAX}`);
  }
  return { firstName, middleName, lastName };
}

export function normalizePhone(input: string, defaultRegion: string): string {
  const e164 = toE164(input, defaultRegion);
  if (!e164) throw IdentityErrors.invalidPhone();
  return e164;
}

export function newUser(input: NewUserInput, ctx: { id: string; now: Date; phoneRegion: string }): User {
  return {
    id: ctx.id,
    ...normalizeName(input.name),
    phoneNumber: normalizePhone(input.phoneNumber, ctx.phoneRegion),
    status: input.status ?? 'Active',
    type: input.type ?? 'Investor',
    companyId: input.companyId ?? null,
    version: 1,
    createdAt: ctx.now,
    updatedAt: ctx.now,
  };
}

/**
 * The user after the patch. A patch that changes nothing returns `changed: false` and the same
 * Version, so repeating a PATCH announces nothing new.
 */
export function applyUserPatch(user: User, patch: UserPatch, ctx: { now: Date; phoneRegion: string }): { changed: boolean; user: User } {
  const name = patch.name ? normalizeName(patch.name) : user;
  const phoneNumber = patch.phoneNumber === undefined ? user.phoneNumber : normalizePhone(patch.phoneNumber, ctx.phoneRegion);
  const status = patch.status ?? user.status;
  const changed =
    name.firstName !== user.firstName ||
    name.middleName !== user.middleName ||
    name.lastName !== user.lastName ||
    phoneNumber !== user.phoneNumber ||
    status !== user.status;
  if (!changed) return { changed: false, user };
  return {
    changed: true,
    user: {
      ...user,
      firstName: name.firstName,
      middleName: name.middleName,
      lastName: name.lastName,
      phoneNumber,
      status,
      version: user.version + 1,
      updatedAt: ctx.now,
    },
  };
}

export function userUpsertedPayload(user: User): UserUpsertedKafkaEvent {
  return {
    UserId: user.id,
    Name: { FirstName: user.firstName, MiddleName: user.middleName, LastName: user.lastName },
    PhoneNumber: user.phoneNumber,
    Status: user.status,
    Version: user.version,
    Type: user.type,
    CompanyId: user.companyId,
  };
}

/** What a user change announces on pin.identity.users.v1: always the snapshot; UserBlocked on entering Blocked. */
export function userChangeEvents(before: User | null, after: User, correlationId?: string): NewEvent[] {
  const common = {
    topic: TOPICS.identityUsers,
    key: after.id,
    contractVersion: CONTRACT_VERSION,
    aggregateType: USER_AGGREGATE,
    aggregateId: after.id,
    occurredAt: after.updatedAt,
    correlationId: correlationId ?? null,
  };
  const events: NewEvent[] = [{ ...common, eventType: USER_UPSERTED_EVENT, payload: userUpsertedPayload(after) }];
  if (after.status === 'Blocked' && before?.status !== 'Blocked') {
    const blocked: UserBlockedKafkaEvent = { UserId: after.id, Version: after.version, BlockedAt: after.updatedAt.toISOString() };
    events.push({ ...common, eventType: USER_BLOCKED_EVENT, payload: blocked });
  }
  return events;
}
