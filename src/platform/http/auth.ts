import { webcrypto } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/** Who a token says the caller is. `sub` is the user id (UUID); `admin` opens identity and ops routes. */
export interface Principal {
  userId: string;
  admin: boolean;
  /** When the token it came from expires (epoch ms); a hub connection is closed then. */
  expiresAt?: number;
}

const Claims = Type.Object({
  sub: Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' }),
  admin: Type.Optional(Type.Boolean()),
});
type Claims = Static<typeof Claims>;

export class AuthError extends Error {
  readonly code = 'AUTH_INVALID_TOKEN';
}

export interface VerifyOptions {
  /** The clock expiry is judged by (default: now). */
  currentDate?: Date;
}

/** What jose verifies with: the raw secret, or a key imported once. */
type VerifyKey = Uint8Array | Awaited<ReturnType<typeof webcrypto.subtle.importKey>>;

/** A verified token's principal and its `exp` (seconds since the epoch), if it has one. */
async function verifyClaims(token: string, key: VerifyKey, opts: VerifyOptions = {}): Promise<{ principal: Principal; exp: number | undefined }> {
  let payload: unknown;
  try {
    ({ payload } = await jwtVerify(token, key, { algorithms: ['HS256'], ...(opts.currentDate ? { currentDate: opts.currentDate } : {}) }));
  } catch (err) {
    throw new AuthError(`token rejected: ${(err as Error).message}`);
  }
  if (!Value.Check(Claims, payload)) throw new AuthError('token has no valid user id (sub)');
  const claims = payload as Claims & { exp?: number };
  const principal: Principal = { userId: claims.sub, admin: claims.admin === true };
  if (claims.exp !== undefined) principal.expiresAt = claims.exp * 1000;
  return { principal, exp: claims.exp };
}

/** Verifies an HS256 bearer token (signature, expiry) and returns its principal. */
export async function verifyToken(token: string, secret: string, opts: VerifyOptions = {}): Promise<Principal> {
  return (await verifyClaims(token, new TextEncoder().encode(secret), opts)).principal;
}

export interface TokenVerifier {
  /** Same answers as verifyToken: the principal, or AuthError for a token that is invalid or expired now. */
  verify(token: string): Promise<Principal>;
  /** Tokens held (tests). */
  readonly size: number;
}

/**
 * verifyToken with a bounded memory of tokens already verified, keyed by the token string: a client
 * sends the same token with every request, and an HMAC check through WebCrypto costs ~180 µs of the
 * event loop while a lookup costs nothing. A remembered token is answered only while its `exp` is
 * still ahead (judged as jose judges it: expired once exp <= now in whole seconds); after that it is
 * verified again, which rejects it. Only tokens that verified are remembered, so a forged token
 * never gets in. Past `maxEntries` the oldest entry goes.
 */
export function createTokenVerifier(secret: string, opts: { maxEntries?: number; now?: () => number } = {}): TokenVerifier {
  const maxEntries = opts.maxEntries ?? 10_000;
  const now = opts.now ?? Date.now;
  const verified = new Map<string, { principal: Principal; exp: number }>();
  // Imported once: handing jose the raw secret would import the key on every call.
  let key: Promise<VerifyKey> | undefined;
  const keyOf = () =>
    (key ??= webcrypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']));

  return {
    async verify(token) {
      const at = now();
      const hit = verified.get(token);
      if (hit && Math.floor(at / 1000) < hit.exp) return hit.principal;
      if (hit) verified.delete(token);
      const { principal, exp } = await verifyClaims(token, await keyOf(), { currentDate: new Date(at) });
      const remembered = Object.freeze(principal);
      verified.set(token, { principal: remembered, exp: exp ?? Number.POSITIVE_INFINITY });
      if (verified.size > maxEntries) verified.delete(verified.keys().next().value!);
      return remembered;
    },
    get size() {
      return verified.size;
    },
  };
}

export async function signToken(
  principal: Principal,
  secret: string,
  opts: { expiresIn?: string | number } = {},
): Promise<string> {
  return new SignJWT({ admin: principal.admin })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(principal.userId)
    .setIssuedAt()
    .setExpirationTime(opts.expiresIn ?? '12h')
    .sign(new TextEncoder().encode(secret));
}

/** Reads the token from `Authorization: Bearer …` or, as SignalR clients send it, `?access_token=`. */
export function extractToken(headers: { authorization?: string }, query?: unknown): string | undefined {
  const header = headers.authorization;
  if (header?.startsWith('Bearer ')) return header.slice(7).trim() || undefined;
  const q = query as { access_token?: unknown } | undefined;
  return typeof q?.access_token === 'string' && q.access_token !== '' ? q.access_token : undefined;
}
