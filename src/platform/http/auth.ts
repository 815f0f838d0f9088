import { SignJWT } from 'jose';

/** Who a token says the caller is. `sub` is the user id (UUID); `admin` opens identity and ops routes. */
export interface Principal {
  userId: string;
  admin: boolean;
  /** When the token it came from expires (epoch ms); a hub connection is closed then. */
  expiresAt?: number;
  /**
   * The caller's role in the ops console and /api/ops/*: `operator` acts (retry, requeue, discard,
   * run, pause), `viewer` only reads. An admin token is an operator (as every admin route already
   * lets it act); a token without `admin` but with the claim `ops_role: "operator"` is an operator
   * of the ops console only (an identity provider's on-call group: no other admin route accepts
   * it), one with `ops_role: "viewer"` a viewer.
   */
  opsRole?: OpsRole;
}

export type OpsRole = 'viewer' | 'operator';

/** The ops role a token's claims give (see Principal.opsRole); any other ops_role value gives nothing. */
export function opsRoleOf(claims: { admin?: boolean; ops_role?: unknown }): OpsRole | undefined {
  if (claims.admin === true || claims.ops_role === 'operator') return 'operator';
  return claims.ops_role === 'viewer' ? 'viewer' : undefined;
}

/**
 * Why a token was refused, as the stable `code` of the 401 (503 for AUTH_KEYS_UNAVAILABLE: the
 * identity provider's key set could not be fetched, which is not the caller's fault).
 */
export const AUTH_CODES = [
  'AUTH_INVALID_TOKEN',
  'AUTH_TOKEN_EXPIRED',
  'AUTH_TOKEN_CLAIMS_INVALID',
  'AUTH_TOKEN_LIFETIME_TOO_LONG',
  'AUTH_TOKEN_ISSUED_IN_FUTURE',
  'AUTH_TOKEN_KEY_UNKNOWN',
  'AUTH_KEYS_UNAVAILABLE',
] as const;
export type AuthCode = (typeof AUTH_CODES)[number];

export class AuthError extends Error {
  readonly code: AuthCode;
  readonly statusCode: 401 | 503;
  constructor(code: AuthCode, message: string) {
    super(message);
    this.code = code;
    this.statusCode = code === 'AUTH_KEYS_UNAVAILABLE' ? 503 : 401;
  }
}

/** An HS256 token signed with JWT_SECRET (development tokens, tests); `iss`/`aud` when the service checks them. */
export async function signToken(
  principal: Principal,
  secret: string,
  opts: { expiresIn?: string | number; issuer?: string; audience?: string } = {},
): Promise<string> {
  const jwt = new SignJWT({ admin: principal.admin, ...(principal.opsRole === 'viewer' ? { ops_role: 'viewer' } : {}) })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(principal.userId)
    .setIssuedAt()
    .setExpirationTime(opts.expiresIn ?? '12h');
  if (opts.issuer !== undefined) jwt.setIssuer(opts.issuer);
  if (opts.audience !== undefined) jwt.setAudience(opts.audience);
  return jwt.sign(new TextEncoder().encode(secret));
}

/** Reads the token from `Authorization: Bearer …` or, as SignalR clients send it, `?access_token=`. */
export function extractToken(headers: { authorization?: string }, query?: unknown): string | undefined {
  const header = headers.authorization;
  if (header?.startsWith('Bearer ')) return header.slice(7).trim() || undefined;
  const q = query as { access_token?: unknown } | undefined;
  return typeof q?.access_token === 'string' && q.access_token !== '' ? q.access_token : undefined;
}
