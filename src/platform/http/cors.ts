import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import { HTTP_DEFAULTS } from './defaults.ts';

/**
 * Request headers a browser app may send cross-origin: the bearer token and JSON bodies of every
 * route, the tracking routes' device secret, and what @microsoft/signalr adds to its negotiate
 * (X-Requested-With, X-SignalR-User-Agent). A header not listed fails the browser's preflight.
 */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'X-Device-Secret', 'X-Requested-With', 'X-SignalR-User-Agent'] as const;

export const CORS_ALLOWED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Retry-After is not a CORS-safelisted response header: without this a web app's 429 and 503 back-off could not read it. */
export const CORS_EXPOSED_HEADERS = ['Retry-After'] as const;

/**
 * CORS for the allow-listed origins only (CORS_ALLOWED_ORIGINS); with none, nothing is registered and
 * the API stays same-origin (OPTIONS answers 404). Registered before any route, so a preflight is
 * answered in onRequest, before auth or a rate limit could refuse it (a preflight carries no token).
 *
 * A refused origin gets no CORS header at all, so the browser blocks the response; its preflight falls
 * through to the 404 `{ code, message }` of an unknown route, as without CORS. Credentials are allowed
 * because @microsoft/signalr sends its negotiate with `credentials: 'include'` by default, which a
 * browser refuses to read without `Access-Control-Allow-Credentials`; the service authenticates by
 * bearer token only and sets no cookie, so a credentialed request gains nothing but a load balancer's
 * affinity cookie.
 */
export async function registerCors(app: FastifyInstance, origins: readonly string[]): Promise<void> {
  if (origins.length === 0) return;
  const allowed = new Set(origins);
  await app.register(cors, {
    // A function, not the list: with a list the plugin still answers a refused origin's preflight
    // with 204 and its Allow-* headers (only Allow-Origin left out).
    origin: (origin, cb) => cb(null, origin !== undefined && allowed.has(origin)),
    methods: [...CORS_ALLOWED_METHODS],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    credentials: true,
    maxAge: HTTP_DEFAULTS.corsPreflightMaxAgeSeconds,
    // Strict mode answers an allowed origin's OPTIONS without Access-Control-Request-Method with a
    // text/plain 400, not `{ code, message }`; answering it like a preflight grants nothing more.
    strictPreflight: false,
    logLevel: 'warn',
  });
}
