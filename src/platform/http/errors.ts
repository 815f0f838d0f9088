import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { unavailableDependencyIn } from '../errors/index.ts';
import { validationMessage } from './strict-inputs.ts';
import { HTTP_DEFAULTS } from './defaults.ts';

/**
 * An error a caller can act on: a stable code (the seeds' codes, e.g. USER_ACTIVITY_SESSION_NOT_FOUND),
 * an HTTP status and a message that is safe to show. Anything else becomes a 500 with no details.
 */
export class AppError extends Error {
  readonly code: string;
  readonly statusCode: number;
  /** Sent as `Retry-After` (seconds): when a 503 for a full queue or a 429 is worth trying again. */
  readonly retryAfterSeconds?: number;
  constructor(code: string, message: string, statusCode = 400, opts: { retryAfterSeconds?: number } = {}) {
    super(message);
    this.code = code;
    this.statusCode = statusCode;
    if (opts.retryAfterSeconds !== undefined) this.retryAfterSeconds = opts.retryAfterSeconds;
  }
}

/** Every refusal's body; the API document has it per operation and status with the codes listed (errorCodes, openapi-components.ts). */
export const ErrorBody = {
  title: 'Error',
  type: 'object',
  required: ['code', 'message'],
  properties: { code: { type: 'string' }, message: { type: 'string' } },
} as const;

/**
 * Fastify's router refuses two inputs before any route, hook or error handler sees them, in its own
 * shape (`{ error, code, message, statusCode }`, the whole path echoed back): a path that is not valid
 * percent-encoding and a path parameter past maxParamLength. Given as the server's `frameworkErrors`
 * option, they answer in the one format too: the first as the 400 VALIDATION_FAILED every API route
 * documents, the second as its documented 414 (openapi-components.ts). The message names no path:
 * it may be long, and is the caller's own input anyway.
 */
export function frameworkErrors(err: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply.status(414).send({ code: err.code, message: 'a path parameter is longer than 100 characters' });
  } else if (err.code === 'FST_ERR_BAD_URL') {
    void reply.status(400).send({ code: 'VALIDATION_FAILED', message: 'the path is not valid percent-encoding (RFC 3986)' });
  } else {
    // FST_ERR_ASYNC_CONSTRAINT: no route here uses an asynchronous constraint.
    reply.log.error({ err: { message: err.message, code: err.code } }, 'request failed in the router');
    void reply.status(500).send({ code: 'INTERNAL_ERROR', message: 'internal error' });
  }
}

/** What Node's HTTP parser refuses before any route, by its error code: status, stable code, message. */
const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'REQUEST_HEADERS_TOO_LARGE', 'the request headers are larger than the server takes (16 KiB)'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'REQUEST_TIMEOUT', 'the request was not received in time'],
};
const MALFORMED: [number, string, string] = [400, 'BAD_REQUEST', 'the request is not valid HTTP'];

/**
 * Node's HTTP server refuses a request it cannot parse (headers past its limit, a malformed request
 * line) or that does not arrive in time before Fastify sees it, and Fastify's default answer is its
 * own shape (`{ error, message, statusCode }`). Given as the server's `clientErrorHandler`, these
 * answer `{ code, message }` like every refusal: 431 REQUEST_HEADERS_TOO_LARGE, 408 REQUEST_TIMEOUT,
 * 400 BAD_REQUEST. They come before routing, so no operation lists them (security.md, "Strict inputs").
 */
export function clientErrors(err: Error & { code?: string }, socket: Duplex): void {
  // A reset connection: nobody to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] = CLIENT_ERRORS[err.code ?? ''] ?? MALFORMED;
  const body = JSON.stringify({ code, message });
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}

/** One error format for every route: `{ code, message }`; 5xx details stay in the log. */
export function registerErrorHandling(app: FastifyInstance): void {
  const answer = (reply: FastifyReply, err: AppError) => {
    if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
    return reply.status(err.statusCode).send({ code: err.code, message: err.message });
  };
  app.setErrorHandler((err: FastifyError | AppError, req, reply) => {
    if (err instanceof AppError) return answer(reply, err);
    const fe = err as FastifyError;
    if (fe.validation) {
      return reply.status(400).send({ code: 'VALIDATION_FAILED', message: validationMessage(fe) });
    }
    const status = fe.statusCode ?? 500;
    if (status < 500) {
      // Fastify's own client errors (bad JSON, body too large, unsupported media type).
      return reply.status(status).send({ code: fe.code ?? 'BAD_REQUEST', message: fe.message });
    }
    // PostgreSQL or Redis unreachable or going away (an outage, a failover, a restart): the request
    // was fine and may be sent again after a pause, so a 503 with Retry-After, not an opaque 500. A
    // write cut off this way may have committed: clients retry with the same idempotency key
    // (a message's clientMessageId).
    const unavailable = unavailableDependencyIn(err);
    if (unavailable) {
      req.log.warn({ err: { message: unavailable.message, code: (unavailable as { code?: unknown }).code } }, 'request failed: a dependency is unavailable');
      const message = 'a service this request needs is unavailable; try again shortly';
      return answer(reply, new AppError('SERVICE_UNAVAILABLE', message, 503, { retryAfterSeconds: HTTP_DEFAULTS.unavailableRetryAfterSeconds }));
    }
    req.log.error({ err }, 'request failed');
    return reply.status(500).send({ code: 'INTERNAL_ERROR', message: 'internal error' });
  });
  app.setNotFoundHandler((req, reply) =>
    reply.status(404).send({ code: 'ROUTE_NOT_FOUND', message: `no route ${req.method} ${req.url.split('?')[0]}` }),
  );
}
