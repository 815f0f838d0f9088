import { Type } from '@sinclair/typebox';
import { Int, type SettingsOf } from '../types/index.ts';

/** Token verification for REST and the hub. One TypeBox field per setting is its one source of default, bounds and unit (config.ts reads them from the environment). */
export const authSettings = {
  JWT_SECRET: Type.String({
    default: 'dev-only-secret-change-me-in-production-0123456789',
    minLength: 32,
    description: 'HS256 secret for REST and hub tokens (at least 32 characters)',
  }),
  // Here rather than in the messenger's settings: the auth plugin owns every credential check, and the
  // media server is a caller of its own kind (neither a user nor an admin).
  MESSENGER_MEDIA_CALLBACK_SECRET: Type.Optional(
    Type.String({
      minLength: 32,
      description:
        'Bearer secret the media server presents on its recording-outcome callback (compared in constant time); unset = the callback answers 401',
    }),
  ),
  AUTH_JWKS_URL: Type.Optional(
    Type.String({
      pattern: '^https?://',
      description: "Identity provider's JWKS URL: RS256/ES256 tokens are verified against its keys (unset = only HS256 tokens signed with JWT_SECRET)",
    }),
  ),
  AUTH_ISSUER: Type.Optional(Type.String({ minLength: 1, description: 'Required `iss` of every token when set' })),
  AUTH_AUDIENCE: Type.Optional(Type.String({ minLength: 1, description: 'Required `aud` of every token when set' })),
  AUTH_MAX_TOKEN_LIFETIME_SECONDS: Int({
    default: 86_400,
    minimum: 60,
    maximum: 30 * 86_400,
    description: 'A token whose exp − iat (exp − now without iat) is longer than this is refused (AUTH_TOKEN_LIFETIME_TOO_LONG)',
  }),
  AUTH_JWKS_CACHE_MAX_AGE_MS: Int({
    default: 600_000,
    minimum: 1000,
    maximum: 86_400_000,
    description: 'How long fetched JWKS keys are used before they are fetched again',
  }),
  AUTH_JWKS_COOLDOWN_MS: Int({
    default: 30_000,
    minimum: 0,
    maximum: 3_600_000,
    description: 'A token with an unknown kid fetches the JWKS again (key rotation) at most once per this long',
  }),
  AUTH_JWKS_TIMEOUT_MS: Int({
    default: 5000,
    minimum: 100,
    maximum: 60_000,
    description: 'Longest JWKS fetch; past it the request is answered 503 AUTH_KEYS_UNAVAILABLE',
  }),
};

export type AuthSettings = SettingsOf<typeof authSettings>;

/** The verifier's rules as the settings describe them. */
export const tokenRulesOf = (c: AuthSettings) => ({
  secret: c.JWT_SECRET,
  jwksUrl: c.AUTH_JWKS_URL,
  issuer: c.AUTH_ISSUER,
  audience: c.AUTH_AUDIENCE,
  maxLifetimeSeconds: c.AUTH_MAX_TOKEN_LIFETIME_SECONDS,
  jwks: { cacheMaxAgeMs: c.AUTH_JWKS_CACHE_MAX_AGE_MS, cooldownMs: c.AUTH_JWKS_COOLDOWN_MS, timeoutMs: c.AUTH_JWKS_TIMEOUT_MS },
});
