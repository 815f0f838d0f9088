import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The negotiate step hands out a connection token that the client brings back in `?id=` when it opens
 * the WebSocket. Behind a load balancer without sticky sessions the WebSocket may land on another
 * replica than the negotiate did, so the token is self-contained: it carries the connection id, the
 * user it was issued to and an expiry, signed with a key derived from the JWT secret. Any replica
 * can check it, and nothing is stored per negotiate.
 */
export interface ConnectionTicket {
  connectionId: string;
  userId: string;
  /** Epoch milliseconds after which the token no longer opens a connection. */
  expiresAt: number;
}

/** Derived once per secret: every negotiate signs and every connect verifies with it. */
const keys = new Map<string, Buffer>();
const keyFor = (secret: string): Buffer => {
  let key = keys.get(secret);
  if (!key) keys.set(secret, (key = createHmac('sha256', secret).update('pin-hub-connection-token').digest()));
  return key;
};

const mac = (secret: string, body: string): Buffer => createHmac('sha256', keyFor(secret)).update(body).digest();

export function signConnectionToken(ticket: ConnectionTicket, secret: string): string {
  const body = Buffer.from(JSON.stringify({ c: ticket.connectionId, u: ticket.userId, e: ticket.expiresAt })).toString(
    'base64url',
  );
  return `${body}.${mac(secret, body).toString('base64url')}`;
}

/** The ticket when the token is genuine, unexpired at `nowMs` and was issued to `userId`; else undefined. */
export function verifyConnectionToken(
  token: string,
  secret: string,
  userId: string,
  nowMs: number,
): ConnectionTicket | undefined {
  const dot = token.indexOf('.');
  if (dot <= 0) return undefined;
  const body = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1), 'base64url');
  const expected = mac(secret, body);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let claims: { c?: unknown; u?: unknown; e?: unknown };
  try {
    claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as typeof claims;
  } catch {
    return undefined;
  }
  if (typeof claims.c !== 'string' || typeof claims.u !== 'string' || typeof claims.e !== 'number') return undefined;
  if (claims.u !== userId || claims.e <= nowMs) return undefined;
  return { connectionId: claims.c, userId: claims.u, expiresAt: claims.e };
}
