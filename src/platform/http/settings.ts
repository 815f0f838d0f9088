import { isIP } from 'node:net';
import { Type } from '@sinclair/typebox';
import { SECOND_MS } from '../time.ts';
import { Duration, Int, type SettingsOf } from '../types/index.ts';
import { HTTP_DEFAULTS } from './defaults.ts';
import { jwksDefaults } from './token-verifier.ts';

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
      examples: ['https://idp.example.com/.well-known/jwks.json'], description:
        "Identity provider's JWKS URL (https, with AUTH_ISSUER and AUTH_AUDIENCE set, unless ALLOW_INSECURE_DEFAULTS): RS256/ES256 tokens are verified against its keys (unset = only HS256 tokens signed with JWT_SECRET)",
    }),
  ),
  AUTH_ISSUER: Type.Optional(Type.String({ minLength: 1, examples: ['https://idp.example.com'], description: 'Required `iss` of every token when set' })),
  AUTH_AUDIENCE: Type.Optional(Type.String({ minLength: 1, examples: ['pin'], description: 'Required `aud` of every token when set' })),
  AUTH_MAX_TOKEN_LIFETIME: Duration({
    default: HTTP_DEFAULTS.authMaxTokenLifetimeMs,
    minimum: '1m',
    maximum: '30d',
    description: 'A token whose exp − iat (exp − now without iat) is longer than this is refused (AUTH_TOKEN_LIFETIME_TOO_LONG)',
  }),
};

export type AuthSettings = SettingsOf<typeof authSettings>;

/**
 * An identity provider's keys decide who anyone is, so (unless ALLOW_INSECURE_DEFAULTS allows it for
 * local use) they come over TLS — keys fetched over plain http can be swapped on the way — and a
 * token they sign is accepted only when it names that provider and this service: without
 * AUTH_ISSUER/AUTH_AUDIENCE any token the provider signs for any other application would do.
 */
export function jwksProblems(c: Pick<AuthSettings, 'AUTH_JWKS_URL' | 'AUTH_ISSUER' | 'AUTH_AUDIENCE'>): string[] {
  if (!c.AUTH_JWKS_URL) return [];
  const problems: string[] = [];
  if (!c.AUTH_JWKS_URL.startsWith('https://')) problems.push('AUTH_JWKS_URL: must be an https URL');
  if (!c.AUTH_ISSUER) problems.push("AUTH_ISSUER: required with AUTH_JWKS_URL (the identity provider's iss)");
  if (!c.AUTH_AUDIENCE) problems.push("AUTH_AUDIENCE: required with AUTH_JWKS_URL (this service's aud at the identity provider)");
  return problems;
}

/** The verifier's rules as the settings describe them. */
export const tokenRulesOf = (c: AuthSettings) => ({
  secret: c.JWT_SECRET,
  jwksUrl: c.AUTH_JWKS_URL,
  issuer: c.AUTH_ISSUER,
  audience: c.AUTH_AUDIENCE,
  maxLifetimeSeconds: c.AUTH_MAX_TOKEN_LIFETIME / SECOND_MS,
  jwks: jwksDefaults,
});

/**
 * The HTTP server itself: which proxies are trusted for the client address, who may read /metrics,
 * which browser origins may call it (CORS), and how long a client may take. One TypeBox field per
 * setting (config.ts reads them from the environment).
 */
export const httpServerSettings = {
  TRUST_PROXY: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2000,
      examples: ['10.0.0.0/8'], description:
        "Comma-separated addresses/CIDR ranges of the load balancers whose X-Forwarded-For is believed (or loopback, linklocal, uniquelocal); unset = none: the client address is the socket's",
    }),
  ),
  METRICS_SCRAPE_SECRET: Type.Optional(
    Type.String({
      minLength: 32,
      description:
        'Bearer secret Prometheus presents on /metrics (Authorization: Bearer …, compared in constant time; 401 without it); required on a real database while /metrics shares PORT (METRICS_PORT unset); unset = /metrics answers without credentials',
    }),
  ),
  CORS_ALLOWED_ORIGINS: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 4000,
      examples: ['https://app.example.com,https://admin.example.com'],
      description:
        'Comma-separated exact origins (scheme://host[:port]) of the web apps that may call the API and the hub from a browser (CORS, preflights answered); unset = none: same-origin only, no CORS headers',
    }),
  ),
  HTTP_KEEP_ALIVE_TIMEOUT: Duration({
    default: HTTP_DEFAULTS.httpKeepAliveTimeoutMs,
    minimum: '1s',
    maximum: '10m',
    description: "An idle keep-alive connection is closed after this; keep it above the load balancer's idle timeout (often 60 s)",
  }),
  HTTP_MAX_CONCURRENT_REQUESTS_PER_USER: Int({
    default: HTTP_DEFAULTS.httpMaxConcurrentRequestsPerUser,
    minimum: 0,
    maximum: 1000,
    description:
      "Requests one user (a user token's sub) may have in progress on a replica at once; one more is refused with 429 USER_CONCURRENCY_LIMIT and Retry-After: 1, before any query. The default leaves most of the default pool (DATABASE_POOL_MAX 10) and the cores to other users; 0 = no bound",
  }),
};

export type HttpServerSettings = SettingsOf<typeof httpServerSettings>;

const PROXY_KEYWORDS = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** TRUST_PROXY's entries that are neither an address, a CIDR range nor a keyword (config.ts reports them). */
export function invalidTrustProxyEntries(value: string): string[] {
  return value
    .split(',')
    .map((e) => e.trim())
    .filter((entry) => {
      if (PROXY_KEYWORDS.has(entry)) return false;
      const [address, bits, ...rest] = entry.split('/');
      const family = isIP(address ?? '');
      if (family === 0 || rest.length > 0) return true;
      return bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
    });
}

/** Fastify's trustProxy: the listed proxies only, or none. */
export const trustProxyOf = (c: HttpServerSettings): string[] | false =>
  c.TRUST_PROXY ? c.TRUST_PROXY.split(',').map((e) => e.trim()) : false;

/**
 * CORS_ALLOWED_ORIGINS' entries that are not an exact origin (config.ts reports them): an origin is
 * what a browser sends in `Origin`, so anything else (a path, a trailing slash, a wildcard, upper
 * case, a default port spelled out) could never match and would only hide a typo.
 */
export function invalidCorsOrigins(value: string): string[] {
  return corsOriginsOf({ CORS_ALLOWED_ORIGINS: value }).filter((entry) => {
    try {
      const url = new URL(entry);
      // The URL parser takes `*` as a host character: a wildcard would be kept as a literal host.
      return !(url.protocol === 'https:' || url.protocol === 'http:') || url.origin !== entry || entry.includes('*');
    } catch {
      return true;
    }
  });
}

/** The allowed origins, exact (empty: no CORS at all). */
export const corsOriginsOf = (c: Pick<HttpServerSettings, 'CORS_ALLOWED_ORIGINS'>): string[] =>
  (c.CORS_ALLOWED_ORIGINS ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');

/** The hosts a plain http:// origin may name without a warning: this machine (a developer's web app). */
const LOCAL_HOSTNAMES: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The allowed origins served over plain http from another machine: start-up warns about them (http-server.ts). */
export const plainHttpOrigins = (c: Pick<HttpServerSettings, 'CORS_ALLOWED_ORIGINS'>): string[] =>
  corsOriginsOf(c).filter((origin) => {
    const url = URL.parse(origin);
    return url?.protocol === 'http:' && !LOCAL_HOSTNAMES.has(url.hostname);
  });
