import { createHmac, timingSafeEqual, webcrypto } from 'node:crypto';
import { createRemoteJWKSet, customFetch, decodeProtectedHeader, errors, jwtVerify, UnsecuredJWT, type JWTVerifyGetKey } from 'jose';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { AuthError, opsRoleOf, type Principal } from './auth.ts';
import { HTTP_DEFAULTS } from './defaults.ts';
import { SECOND_MS } from '../time.ts';

/**
 * Bearer token verification for REST and the hub. Two kinds of token are accepted, chosen by the
 * header's `alg` (each with only its own algorithms, so a key of one kind never checks the other):
 * HS256 signed with JWT_SECRET, and RS256/ES256 from an identity provider, checked against its JWKS
 * (AUTH_JWKS_URL) through jose's remote key set, which caches the keys for `cacheMaxAgeMs` and
 * fetches again when a token names an unknown `kid` (a rotation), at most once per `cooldownMs`.
 * Every token needs `exp`; `iss`/`aud` are checked when configured; a lifetime above
 * `maxLifetimeSeconds` is refused; `sub` must be a UUID and is lower-cased.
 */

export interface TokenRules {
  secret: string;
  jwksUrl?: string;
  issuer?: string;
  audience?: string;
  /** Longest accepted lifetime: exp − iat (iat taken as now when absent or up to HTTP_DEFAULTS.iatClockSkewSeconds ahead, defaults.ts). */
  maxLifetimeSeconds?: number;
  jwks?: { cacheMaxAgeMs?: number; cooldownMs?: number; timeoutMs?: number };
}

/** The identity provider's key set: kept 10 min, refetched at most every 30 s on an unknown key, a fetch given 5 s. */
export const jwksDefaults = {
  cacheMaxAgeMs: HTTP_DEFAULTS.jwksCacheMaxAgeMs,
  cooldownMs: HTTP_DEFAULTS.jwksCooldownMs,
  timeoutMs: HTTP_DEFAULTS.jwksTimeoutMs,
} as const satisfies Required<NonNullable<TokenRules['jwks']>>;

/** Verified tokens remembered (oldest out first). */
export const tokenCacheDefaults = { maxEntries: HTTP_DEFAULTS.tokenCacheMaxEntries } as const;

const Claims = Type.Object({
  sub: Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' }),
  admin: Type.Optional(Type.Boolean()),
  ops_role: Type.Optional(Type.Unknown()),
  exp: Type.Number(),
  iat: Type.Optional(Type.Number()),
});
type Claims = Static<typeof Claims>;

const ASYMMETRIC = ['RS256', 'ES256'];

/** A remote key set plus how many key sets it has fetched, so a remembered token can tell it was checked against an older one. */
interface KeySet {
  getKey: JWTVerifyGetKey & { readonly fresh: boolean };
  readonly generation: number;
}

function remoteKeySet(url: string, opts: NonNullable<TokenRules['jwks']>): KeySet {
  let generation = 0;
  const getKey = createRemoteJWKSet(new URL(url), {
    cacheMaxAge: opts.cacheMaxAgeMs ?? jwksDefaults.cacheMaxAgeMs,
    cooldownDuration: opts.cooldownMs ?? jwksDefaults.cooldownMs,
    timeoutDuration: opts.timeoutMs ?? jwksDefaults.timeoutMs,
    [customFetch]: async (resource, init) => {
      const res = await fetch(resource, init);
      if (res.ok) generation++;
      return res;
    },
  });
  return {
    getKey,
    get generation() {
      return generation;
    },
  };
}

/** jose's verdicts as stable codes; anything else from the key set's fetch means the keys could not be had. */
function refusal(err: unknown, viaKeySet: boolean): AuthError {
  const why = `token rejected: ${(err as Error).message}`;
  if (err instanceof errors.JWTExpired) return new AuthError('AUTH_TOKEN_EXPIRED', why);
  if (err instanceof errors.JWTClaimValidationFailed) return new AuthError('AUTH_TOKEN_CLAIMS_INVALID', why);
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) {
    return new AuthError('AUTH_TOKEN_KEY_UNKNOWN', why);
  }
  const fetchFailed =
    err instanceof errors.JWKSTimeout ||
    err instanceof errors.JWKSInvalid ||
    !(err instanceof errors.JOSEError) ||
    err.code === 'ERR_JOSE_GENERIC';
  if (viaKeySet && fetchFailed) return new AuthError('AUTH_KEYS_UNAVAILABLE', `identity provider keys unavailable: ${(err as Error).message}`);
  return new AuthError('AUTH_INVALID_TOKEN', why);
}

/** The header of a token judged by hs256Payload; anything else (crit, b64, …) goes through jwtVerify. */
const PLAIN_HEADER = new Set(['alg', 'typ', 'kid']);
const NONE_HEADER = Buffer.from('{"alg":"none"}').toString('base64url');

/**
 * An HS256 token's payload, its signature checked with node:crypto on the event loop (a few µs)
 * instead of WebCrypto, whose every call is an async job costing ~100 µs between the event loop and
 * the thread pool (a reconnect storm verifies thousands of new tokens a second). The claims are then
 * judged by jose's own rules: UnsecuredJWT.decode runs the claim checks jwtVerify runs, with the same
 * options and errors. Undefined when the header carries more than alg/typ/kid: jwtVerify judges those.
 */
function hs256Payload(token: string, secret: string, options: { requiredClaims: string[]; currentDate: Date; issuer?: string; audience?: string }): unknown {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [header, payload, signature] = parts as [string, string, string];
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof fields !== 'object' || fields === null || !Object.keys(fields).every((k) => PLAIN_HEADER.has(k))) return undefined;
  // Compared as text: only the one canonical encoding of the right signature passes.
  const given = Buffer.from(signature);
  const expected = Buffer.from(createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url'));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new errors.JWSSignatureVerificationFailed();
  return UnsecuredJWT.decode(`${NONE_HEADER}.${payload}.`, options).payload;
}

interface Verified {
  principal: Principal;
  exp: number;
  /** The key set generation an RS256/ES256 token was checked against; undefined for HS256. */
  generation?: number;
}

function verifierOf(rules: TokenRules) {
  const maxLifetime = rules.maxLifetimeSeconds ?? (HTTP_DEFAULTS.authMaxTokenLifetimeMs / SECOND_MS);
  const keySet = rules.jwksUrl ? remoteKeySet(rules.jwksUrl, rules.jwks ?? {}) : undefined;
  // Imported once: handing jose the raw secret would import the key on every call.
  let hmac: Promise<webcrypto.CryptoKey> | undefined;
  const hmacKey = () =>
    (hmac ??= webcrypto.subtle.importKey('raw', new TextEncoder().encode(rules.secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']));

  async function verify(token: string, at: Date): Promise<Verified> {
    let alg: string | undefined;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch (err) {
      throw refusal(err, false);
    }
    const asymmetric = alg !== undefined && ASYMMETRIC.includes(alg);
    if (alg !== 'HS256' && !(asymmetric && keySet)) {
      throw new AuthError('AUTH_INVALID_TOKEN', `token rejected: algorithm ${String(alg)} is not accepted`);
    }
    const generation = asymmetric ? keySet!.generation : undefined;
    const options = {
      algorithms: asymmetric ? ASYMMETRIC : ['HS256'],
      requiredClaims: ['exp'],
      currentDate: at,
      ...(rules.issuer !== undefined ? { issuer: rules.issuer } : {}),
      ...(rules.audience !== undefined ? { audience: rules.audience } : {}),
    };
    let payload: unknown;
    try {
      const plain = asymmetric ? undefined : hs256Payload(token, rules.secret, options);
      if (plain !== undefined) payload = plain;
      else ({ payload } = asymmetric ? await jwtVerify(token, keySet!.getKey, options) : await jwtVerify(token, await hmacKey(), options));
    } catch (err) {
      throw refusal(err, asymmetric);
    }
    if (!Value.Check(Claims, payload)) throw new AuthError('AUTH_TOKEN_CLAIMS_INVALID', 'token has no valid user id (sub) or exp');
    const claims = payload as Claims;
    const nowSeconds = Math.floor(at.getTime() / 1000);
    if (claims.iat !== undefined && claims.iat > nowSeconds + HTTP_DEFAULTS.iatClockSkewSeconds) {
      throw new AuthError('AUTH_TOKEN_ISSUED_IN_FUTURE', `token rejected: issued (iat) ${claims.iat - nowSeconds} s in the future; more than ${HTTP_DEFAULTS.iatClockSkewSeconds} s of clock difference`);
    }
    // An iat within the skew must not shorten the lifetime: judged from now then.
    const lifetime = claims.exp - Math.min(claims.iat ?? nowSeconds, nowSeconds);
    if (lifetime > maxLifetime) {
      throw new AuthError('AUTH_TOKEN_LIFETIME_TOO_LONG', `token rejected: lifetime ${lifetime} s exceeds ${maxLifetime} s`);
    }
    const opsRole = opsRoleOf(claims);
    const principal: Principal = { userId: claims.sub.toLowerCase(), admin: claims.admin === true, expiresAt: claims.exp * 1000, ...(opsRole ? { opsRole } : {}) };
    return { principal, exp: claims.exp, ...(generation !== undefined ? { generation } : {}) };
  }

  /** A remembered RS256/ES256 token is answered only while the key set it was checked against is current and fresh. */
  const stillCurrent = (v: Verified) => v.generation === undefined || (v.generation === keySet!.generation && keySet!.getKey.fresh);
  return { verify, stillCurrent };
}

/** Verifies one token without remembering it (scripts, tests). */
export async function verifyToken(token: string, rules: TokenRules, opts: { currentDate?: Date } = {}): Promise<Principal> {
  return (await verifierOf(rules).verify(token, opts.currentDate ?? new Date())).principal;
}

export interface TokenVerifier {
  /** The principal, or AuthError for a token that is refused now. */
  verify(token: string): Promise<Principal>;
  /** Tokens held (tests). */
  readonly size: number;
}

/**
 * Verification with a bounded memory of tokens already verified, keyed by the token string: a client
 * sends the same token with every request, and a signature check through WebCrypto costs ~180 µs of
 * the event loop while a lookup costs nothing. A remembered token is answered only while its `exp`
 * is still ahead (judged as jose judges it: expired once exp <= now in whole seconds) and, for an
 * identity provider's token, while no newer key set was fetched (a rotation that removed its key
 * refuses it at once); otherwise it is verified again. Only tokens that verified are remembered, so a
 * forged token never gets in. Past `maxEntries` the oldest entry goes.
 */
export function createTokenVerifier(rules: TokenRules, opts: { maxEntries?: number; now?: () => number } = {}): TokenVerifier {
  const maxEntries = opts.maxEntries ?? tokenCacheDefaults.maxEntries;
  const now = opts.now ?? Date.now;
  const verified = new Map<string, Verified>();
  const tokens = verifierOf(rules);

  return {
    async verify(token) {
      const at = now();
      const hit = verified.get(token);
      if (hit && Math.floor(at / 1000) < hit.exp && tokens.stillCurrent(hit)) return hit.principal;
      if (hit) verified.delete(token);
      const fresh = await tokens.verify(token, new Date(at));
      const entry = { ...fresh, principal: Object.freeze(fresh.principal) };
      verified.set(token, entry);
      if (verified.size > maxEntries) verified.delete(verified.keys().next().value!);
      return entry.principal;
    },
    get size() {
      return verified.size;
    },
  };
}
