import { SignJWT, jwtVerify } from 'jose';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/** Who a token says the caller is. `sub` is the user id (UUID); `admin` opens identity and ops routes. */
export interface Principal {
  userId: string;
  admin: boolean;
}

const Claims = Type.Object({
  sub: Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' }),
  admin: Type.Optional(Type.Boolean()),
});
type Claims = Static<typeof Claims>;

export class AuthError extends Error {
  readonly code = 'AUTH_INVALID_TOKEN';
}

/** Verifies an HS256 bearer token (signature, expiry) and returns its principal. */
export async function verifyToken(token: string, secret: string): Promise<Principal> {
  let payload: unknown;
  try {
    ({ payload } = await jwtVerify(token, new TextEncoder().encode(secret), { algorithms: ['HS256'] }));
  } catch (err) {
    throw new AuthError(`token rejected: ${(err as Error).message}`);
  }
  if (!Value.Check(Claims, payload)) throw new AuthError('token has no valid user id (sub)');
  const claims = payload as Claims;
  return { userId: claims.sub, admin: claims.admin === true };
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
