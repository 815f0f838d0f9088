import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../../platform/db/index.ts';
import { pushTokens } from './schema.ts';

export type PushPlatform = 'android' | 'ios' | 'web';

/** Registers a device token for the user; a token seen before moves to this user (device changed hands). */
export async function registerPushToken(db: Db, userId: string, token: string, platform: PushPlatform, now: Date): Promise<void> {
  await db
    .insert(pushTokens)
    .values({ token, userId, platform, createdAt: now, updatedAt: now })
    .onConflictDoUpdate({ target: pushTokens.token, set: { userId, platform, updatedAt: now } });
}

/** Removes one of the user's tokens (logout on a device); true when it existed. */
export async function unregisterPushToken(db: Db, userId: string, token: string): Promise<boolean> {
  const deleted = await db
    .delete(pushTokens)
    .where(and(eq(pushTokens.token, token), eq(pushTokens.userId, userId)))
    .returning({ token: pushTokens.token });
  return deleted.length > 0;
}

/** Deletes tokens the push service called invalid, in the caller's transaction (with the notification's terminal outcome). */
export async function deletePushTokens(tx: Db, tokens: readonly string[]): Promise<number> {
  if (tokens.length === 0) return 0;
  const result = await tx.execute(sql`
    delete from notifications.push_tokens where token in (select jsonb_array_elements_text(${JSON.stringify(tokens)}::jsonb))`);
  return result.rowCount ?? 0;
}
