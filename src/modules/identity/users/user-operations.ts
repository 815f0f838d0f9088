import type { Db } from '../../../platform/db/index.ts';
import { maskName, maskPhone } from '../../../platform/observability/index.ts';
import { enqueue } from '../../../platform/outbox/index.ts';
import { newId } from '../../../platform/time.ts';
import type { IdentityContext } from '../context.ts';
import { IdentityErrors, isUniqueViolation } from '../errors.ts';
import { findUser, insertUser, updateUser } from './user-sql.ts';
import { applyUserPatch, newUser, userChangeEvents, type NewUserInput, type User, type UserPatch } from './users.ts';

/** The user registry's operations: each change and its pin.identity.users.v1 events in one transaction. */

const PHONE_UNIQUE = 'ux_users_phone_number';
const ID_UNIQUE = 'users_pkey';

export async function getUser(ctx: IdentityContext, id: string): Promise<User> {
  const user = await findUser(ctx.db, id);
  if (!user) throw IdentityErrors.userNotFound(id);
  return user;
}

export async function createUser(ctx: IdentityContext, input: NewUserInput, correlationId?: string): Promise<User> {
  // Lower-case, as the token verifier lower-cases `sub`: the id must match the tokens that name it.
  const user = newUser(input, { id: input.id?.toLowerCase() ?? newId(), now: ctx.clock.now(), phoneRegion: ctx.settings.phoneRegion });
  let eventTypes: string[];
  try {
    eventTypes = await ctx.db.transaction(async (tx) => {
      await insertUser(tx, user);
      return announce(tx, null, user, correlationId);
    });
  } catch (err) {
    if (isUniqueViolation(err, PHONE_UNIQUE)) throw IdentityErrors.phoneTaken();
    if (isUniqueViolation(err, ID_UNIQUE)) throw IdentityErrors.userIdTaken(user.id);
    throw err;
  }
  countEvents(ctx, eventTypes);
  ctx.log.info({ userId: user.id, phone: maskPhone(user.phoneNumber), firstName: maskName(user.firstName), version: 1 }, 'user created');
  return user;
}

/** Changes name, phone or status; a patch that changes nothing keeps the Version and announces nothing. */
export async function patchUser(ctx: IdentityContext, id: string, patch: UserPatch, correlationId?: string): Promise<User> {
  let result: { user: User; eventTypes: string[] };
  try {
    result = await ctx.db.transaction(async (tx) => {
      const before = await findUser(tx, id, { forUpdate: true });
      if (!before) throw IdentityErrors.userNotFound(id);
      const { changed, user } = applyUserPatch(before, patch, { now: ctx.clock.now(), phoneRegion: ctx.settings.phoneRegion });
      if (!changed) return { user: before, eventTypes: [] };
      await updateUser(tx, user);
      return { user, eventTypes: await announce(tx, before, user, correlationId) };
    });
  } catch (err) {
    if (isUniqueViolation(err, PHONE_UNIQUE)) throw IdentityErrors.phoneTaken();
    throw err;
  }
  if (result.eventTypes.length > 0) {
    countEvents(ctx, result.eventTypes);
    ctx.log.info({ userId: id, version: result.user.version, status: result.user.status }, 'user updated');
  }
  return result.user;
}

/** Writes the change's events; returns their types (counted once the transaction commits). */
async function announce(tx: Db, before: User | null, after: User, correlationId?: string): Promise<string[]> {
  const events = userChangeEvents(before, after, correlationId);
  await enqueue(tx, events);
  return events.map((e) => e.eventType);
}

function countEvents(ctx: IdentityContext, eventTypes: readonly string[]): void {
  for (const t of eventTypes) ctx.metrics.userEvents.inc({ event_type: t });
}
