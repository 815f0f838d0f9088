import { DAY_MS, MINUTE_MS, SECOND_MS } from '../time.ts';
import { defineDefaults } from '../types/index.ts';

/**
 * Every default of the HTTP part (server, auth, CORS, limits, health), in one place: the settings'
 * (settings.ts shows them to operators) and the fixed values only a developer tunes (a test shortens
 * one through buildApp's `tuning`). Protocol facts (status codes, header names) are not defaults.
 */
export const HTTP_DEFAULTS = defineDefaults({
  /** HTTP_KEEP_ALIVE_TIMEOUT: above the load balancer's idle timeout (often 60 s). */
  httpKeepAliveTimeoutMs: 72 * SECOND_MS,
  /** HTTP_MAX_CONCURRENT_REQUESTS_PER_USER: leaves most of the default pool and the cores to other users. */
  httpMaxConcurrentRequestsPerUser: 4,
  /** AUTH_MAX_TOKEN_LIFETIME, and the verifier's own when built without rules. */
  authMaxTokenLifetimeMs: 1 * DAY_MS,

  /** A client must have sent its whole request (headers and body) within this; otherwise 408 and the connection closes (once HTTP_REQUEST_TIMEOUT). */
  httpRequestTimeoutMs: 30 * SECOND_MS,
  /** A connection on which nothing is read or written for this long is closed; hub sockets ping well within it (once HTTP_CONNECTION_TIMEOUT). */
  httpConnectionTimeoutMs: 2 * MINUTE_MS,
  /** Node's headers timeout and its check interval never exceed these, whatever the request timeout. */
  httpHeadersTimeoutCapMs: 1 * MINUTE_MS,
  httpConnectionsCheckCapMs: 30 * SECOND_MS,
  /**
   * The identity provider's key set: kept 10 min, refetched at most every 30 s for a token naming an
   * unknown kid (key rotation without letting forged kids hammer the provider), and a fetch slower
   * than 5 s answers 503 AUTH_KEYS_UNAVAILABLE (once the AUTH_JWKS_*_MS settings).
   */
  jwksCacheMaxAgeMs: 10 * MINUTE_MS,
  jwksCooldownMs: 30 * SECOND_MS,
  jwksTimeoutMs: 5 * SECOND_MS,
  /** Verified tokens remembered (oldest out first). */
  tokenCacheMaxEntries: 10_000,
  /**
   * How far ahead of this replica's clock a token's `iat` may be: the issuer's clock (an identity
   * provider, another replica) may run a little ahead, and a token used right after it was issued
   * must not be refused for that. Further ahead, the token was not issued yet by any honest clock:
   * 401 AUTH_TOKEN_ISSUED_IN_FUTURE. exp and nbf keep jose's default, no tolerance.
   */
  iatClockSkewSeconds: 60,
  /** How long a browser may reuse a preflight's answer (Chromium caps it at 2 h): an allow-list change reaches open apps within it. */
  corsPreflightMaxAgeSeconds: 600,
  /** The window the per-minute rate limits count in. */
  rateLimitWindowMs: 1 * MINUTE_MS,
  /** The shared rate limits' Redis: a command unanswered by then lets the request through; start-up waits this long for it. */
  rateLimitRedisCommandTimeoutMs: 500,
  rateLimitRedisReadyWaitMs: 3 * SECOND_MS,
  /** Retry-After of the per-user concurrency refusal: a slot frees as soon as one of the user's requests ends. */
  userConcurrencyRetryAfterSeconds: 1,
  /** Refusals on hold at once; past it the rest are answered at once (a timer each is cheap, but not unbounded). */
  userConcurrencyHeldMax: 10_000,
  /** Retry-After of a 503 for an unreachable dependency: a restart or failover takes seconds, not milliseconds. */
  unavailableRetryAfterSeconds: 5,
  /** A health check that does not answer within this is `down` (a hung database must not hold /health/ready or a scrape). */
  healthCheckTimeoutMs: 3 * SECOND_MS,
  /**
   * A readiness answer is reused while it is at most this old (measured from the start of its checks).
   * Every request running its own checks let a flood of /health/ready exhaust the pool and time the
   * checks out — on every replica at once, which the load balancer would then take out together.
   */
  healthReadyMaxAgeMs: 1 * SECOND_MS,
  /** An admin's refused request is written to the audit at most once per user this often… */
  auditUserRefusalEveryMs: 1 * MINUTE_MS,
  /** …remembering this many users (forgotten whole past it: a flood of fresh tokens costs one row each at most). */
  auditUserRefusalsKept: 10_000,
  /** An audited request body: strings cut to this many characters, lists to this many items, the whole to this much JSON. */
  auditMaxText: 200,
  auditMaxItems: 20,
  auditMaxJson: 4000,
});

/** The HTTP part's fixed values as buildApp takes them (a test shortens one). */
export type HttpTuning = Pick<typeof HTTP_DEFAULTS, 'httpRequestTimeoutMs' | 'httpConnectionTimeoutMs'>;
