import { classifyHttpFailure, parseRetryAfter } from './classify.ts';
import { NTF } from '../model.ts';
import type { SendResult } from './port.ts';

export interface HttpSendOptions {
  url: string;
  bearer?: string;
  idempotencyKey: string;
  body: unknown;
  timeoutMs: number;
  signal: AbortSignal;
  now: () => Date;
  /** Push services answer 404/410 for a dead token: NTF_PUSH_TOKEN_INVALID. */
  push: boolean;
}

async function readJson(res: Response): Promise<unknown> {
  try {
    const text = await res.text();
    return text ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    return undefined;
  }
}

/** The provider's message id from `{ messageId }`, `{ id }` or `{ name }` (FCM), if any. */
function messageIdOf(body: unknown): string | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const b = body as Record<string, unknown>;
  for (const key of ['messageId', 'id', 'name']) if (typeof b[key] === 'string' && b[key]) return (b[key] as string).slice(0, 255);
  return undefined;
}

/**
 * One JSON POST to an SMS-gateway or push API with `Idempotency-Key: NotificationId:DeliveryCycle`,
 * the answer classified. Network errors and timeouts are NTF_PROVIDER_TRANSIENT.
 */
export async function postToProvider(o: HttpSendOptions): Promise<SendResult> {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'idempotency-key': o.idempotencyKey };
  if (o.bearer) headers.authorization = `Bearer ${o.bearer}`;
  let res: Response;
  try {
    res = await fetch(o.url, {
      method: 'POST',
      headers,
      body: JSON.stringify(o.body),
      signal: AbortSignal.any([o.signal, AbortSignal.timeout(o.timeoutMs)]),
    });
  } catch {
    return { ok: false, code: NTF.transient };
  }
  let body: unknown;
  try {
    body = await readJson(res);
  } catch {
    body = undefined;
  }
  if (res.ok) return { ok: true, providerMessageId: messageIdOf(body) ?? o.idempotencyKey };
  const code = classifyHttpFailure(res.status, body, { push: o.push });
  const retryAfterMs = code === NTF.rateLimited || code === NTF.transient ? parseRetryAfter(res.headers.get('retry-after'), o.now()) : undefined;
  return { ok: false, code, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
}
