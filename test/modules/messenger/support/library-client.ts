import { after } from 'node:test';
import { MessengerClient } from '../../../../packages/messenger-client/src/index.ts';
import type { MessengerApp } from './app.ts';

/** The app's HTTP port (it listens on a free one). */
export const portOf = (m: MessengerApp): number => (m.app.server.address() as { port: number }).port;

/** The client library (its source) as an app constructs it against `m`, with short backoffs; stopped after the test. */
export function clientOf(m: MessengerApp, token: string, fetchImpl?: typeof fetch): MessengerClient {
  const c = new MessengerClient({ baseUrl: `http://127.0.0.1:${portOf(m)}`, token, backoff: { minMs: 20, baseMs: 50, capMs: 200 }, ...(fetchImpl ? { fetch: fetchImpl } : {}) });
  after(() => c.stop());
  return c;
}
