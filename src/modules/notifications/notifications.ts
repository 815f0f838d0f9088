import type { Db } from '../../platform/db/index.ts';
import type { UserFrames } from '../../platform/module.ts';
import { AppError } from '../../platform/http/index.ts';
import { newId } from '../../platform/time.ts';
import { API_ERRORS, type Channel, type Status } from './model.ts';
import type { ProviderRegistry } from './providers/registry.ts';
import type { NotificationRow } from './schema.ts';
import { recordStatusChanges } from './status-frames.ts';
import { insertNotifications, markReadAt, pushTokensOf, selectChannelConfigs, selectOwnNotification, wakeDispatcher, type NewCopy } from './sql.ts';

export interface NewNotification {
  recipientUserId: string;
  title: string;
  body?: string;
  data?: Record<string, unknown>;
  /** External channels; the in-app copy is always created besides them (AC5). */
  channels?: Channel[];
  email?: string;
  phone?: string;
  correlationId?: string | null;
  /** Dedupe prefix for rows created from an event: the same source never creates a row twice. */
  sourceKey?: string;
}

export type HeldBackReason = 'channel_disabled' | 'provider_not_implemented' | 'provider_not_configured';

/** Why a row of this channel waits instead of going out (A3); null: it can be sent. */
export function heldBackReason(isEnabled: boolean, providerState: string): HeldBackReason | null {
  if (!isEnabled) return 'channel_disabled';
  if (providerState === 'available') return null;
  return providerState === 'not_configured' ? 'provider_not_configured' : 'provider_not_implemented';
}

export interface Created {
  rows: NotificationRow[];
  /** Rows that wait instead of going out now (A3): counted by the caller. */
  heldBack: { channel: Channel; reason: HeldBackReason }[];
}

/**
 * Stores the in-app copy plus one row per external channel (Push: one per registered device token;
 * none when the user has no token), all Pending, and wakes the dispatcher at commit. Runs in the
 * caller's transaction (the REST route's or the consumer's).
 */
export async function createNotifications(tx: Db, input: NewNotification, now: Date, providers: ProviderRegistry): Promise<Created> {
  const key = (suffix: string) => (input.sourceKey ? `${input.sourceKey}:${suffix}` : null);
  const copies: NewCopy[] = [{ id: newId(), channel: 'InApp', recipientAddress: null, sourceKey: key('InApp') }];
  for (const channel of new Set(input.channels ?? [])) {
    if (channel === 'InApp') continue;
    if (channel === 'Push') {
      const tokens = await pushTokensOf(tx, input.recipientUserId);
      tokens.forEach((token, i) => copies.push({ id: newId(), channel, recipientAddress: token, sourceKey: key(`Push:${i}`) }));
      continue;
    }
    const address = channel === 'Email' ? input.email : channel === 'Sms' ? input.phone : undefined;
    if ((channel === 'Email' || channel === 'Sms') && !address) {
      throw new AppError(API_ERRORS.missingAddress, `channel ${channel} needs ${channel === 'Email' ? 'email' : 'phone'}`, 400);
    }
    copies.push({ id: newId(), channel, recipientAddress: address ?? null, sourceKey: key(channel) });
  }
  const rows = await insertNotifications(tx, {
    recipientUserId: input.recipientUserId,
    title: input.title,
    body: input.body ?? '',
    data: input.data ?? {},
    correlationId: input.correlationId ?? null,
    now,
    copies,
  });
  if (rows.length > 0) await wakeDispatcher(tx);

  const channels = [...new Set(rows.map((r) => r.channel))];
  const configs = channels.length === 0 ? [] : await selectChannelConfigs(tx, channels);
  const heldBack: Created['heldBack'] = [];
  for (const r of rows) {
    const c = configs.find((x) => x.channel === r.channel);
    const reason = heldBackReason(c?.isEnabled ?? false, c ? providers.state(c.providerKey) : 'unknown');
    if (reason) heldBack.push({ channel: r.channel as Channel, reason });
  }
  return { rows, heldBack };
}

/** One of the user's notifications (any channel); 404 for someone else's, so ids are not probed. */
export async function getOwnNotification(db: Db, userId: string, id: string): Promise<NotificationRow> {
  const row = await selectOwnNotification(db, userId, id);
  if (!row) throw new AppError(API_ERRORS.notFound, 'no such notification', 404);
  return row;
}

export type ReadDecision = { kind: 'mark' } | { kind: 'already-read' } | { kind: 'conflict'; currentVersion: number };

/**
 * Mark-read with an expected version: the first committed mutation wins, the loser re-reads (A5).
 * Reading never touches Status, so a Sent notification stays Sent. The notification_created frame
 * carries the version the row has once its delivery is recorded (the claimed version + 1), so a
 * client marks it read with that and no first 409; in the moment between the frame and that record
 * the row is one version behind and not Sent yet, and the mark is taken too (the delivery's write
 * then loses the version race and re-applies Sent on top of it).
 */
export function decideMarkRead(state: { version: number; readAt: Date | null; status: string }, expectedVersion: number): ReadDecision {
  if (state.readAt) return { kind: 'already-read' };
  const announced = state.version === expectedVersion - 1 && state.status !== 'Sent';
  if (state.version !== expectedVersion && !announced) return { kind: 'conflict', currentVersion: state.version };
  return { kind: 'mark' };
}

/**
 * Mark-read with the version the client last saw: a conditional update, so the first committed
 * mutation wins and a stale client gets 409 and re-reads (A5). Status is never touched: a Sent
 * notification stays Sent, and a worker's outcome that lost to this re-reads and re-applies.
 * `changed` is false when it was read already (then nothing is announced). The read is announced
 * (NotificationStatusChanged) through a frame stored in the same transaction.
 */
export async function markRead(db: Db, frames: UserFrames, userId: string, id: string, expectedVersion: number, now: Date): Promise<{ row: NotificationRow; changed: boolean }> {
  const updated = await db.transaction(async (tx) => {
    const row = await markReadAt(tx, userId, id, expectedVersion, now);
    if (row) {
      await recordStatusChanges(
        frames,
        tx,
        [{ notificationId: row.id, recipientUserId: row.recipientUserId, channel: row.channel as Channel, status: row.status as Status, terminal: row.terminal, deliveryCycle: row.deliveryCycle, errorCode: row.status === 'Failed' ? row.lastError : null, readAt: row.readAt, version: row.version }],
        now,
      );
    }
    return row;
  });
  if (updated) return { row: updated, changed: true };
  const current = await getOwnNotification(db, userId, id);
  const decision = decideMarkRead(current, expectedVersion);
  if (decision.kind === 'already-read') return { row: current, changed: false };
  throw new AppError(
    API_ERRORS.versionConflict,
    `notification changed meanwhile (version ${current.version}, expected ${expectedVersion}); re-read it and retry`,
    409,
  );
}
