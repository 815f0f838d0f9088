import type { Logger } from '../../../platform/observability/index.ts';
import { NTF } from '../model.ts';
import type { Delivery, SendResult } from '../providers/port.ts';
import type { ClaimedNotification, DeliveryDeps } from './outcomes.ts';
import { idempotencyKeyOf } from './rules.ts';
import type { ClaimedRow } from './sql.ts';

/** How long sends in flight may finish after a stop is asked (the shutdown budget is 10 s). */
export const STOP_GRACE_MS = 3000;

export const deliveryOf = (row: ClaimedRow): Delivery => ({
  notificationId: row.id,
  deliveryCycle: row.deliveryCycle,
  idempotencyKey: idempotencyKeyOf(row.id, row.deliveryCycle),
  channel: row.channel,
  recipientUserId: row.recipientUserId,
  recipientAddress: row.recipientAddress,
  title: row.title,
  body: row.body,
  data: row.data,
  createdAt: new Date(row.createdAt),
});

/**
 * Calls `fn` with a signal that aborts `graceMs` after `stop` does: a stop starts no new send (the
 * kernel checks it between rows), and the sends in flight get a short grace before they are cut off.
 * A cut send that the provider had accepted is resent with the same idempotency key by a later run,
 * and the provider swallows it (the crash case, A4).
 */
async function withStopGrace<T>(stop: AbortSignal, graceMs: number, fn: (cutOff: AbortSignal) => Promise<T>): Promise<T> {
  const cutOff = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const onStop = () => {
    timer = setTimeout(() => cutOff.abort(new Error('worker stopping')), graceMs).unref();
  };
  stop.addEventListener('abort', onStop, { once: true });
  try {
    return await fn(cutOff.signal);
  } finally {
    stop.removeEventListener('abort', onStop);
    clearTimeout(timer);
  }
}

/**
 * Step 2 of both delivery jobs: one provider call, outside any transaction. Never throws: a
 * channel whose adapter cannot send answers NTF_PROVIDER_NOT_IMPLEMENTED (the row waits), an adapter
 * that throws or hangs past `hardTimeoutMs` (a safety net above the adapters' own timeouts) is
 * NTF_PROVIDER_TRANSIENT.
 */
export async function sendNotification(
  deps: DeliveryDeps,
  row: ClaimedNotification,
  run: { signal: AbortSignal; log: Logger },
  hardTimeoutMs: number,
): Promise<SendResult> {
  const key = row.providerKey;
  const provider = deps.providers.get(key);
  if (!provider || deps.providers.state(key) !== 'available') return { ok: false, code: NTF.notImplemented };
  const end = deps.metrics.sendDuration.startTimer({ provider: key });
  try {
    return await withStopGrace(run.signal, STOP_GRACE_MS, (cutOff) =>
      provider.send(deliveryOf(row), AbortSignal.any([cutOff, AbortSignal.timeout(hardTimeoutMs)])),
    );
  } catch (err) {
    run.log.warn({ err, notificationId: row.id, provider: key }, 'provider adapter threw; counted as transient');
    return { ok: false, code: NTF.transient };
  } finally {
    end();
  }
}
