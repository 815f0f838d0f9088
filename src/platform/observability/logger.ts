import { pino, type Logger, type LoggerOptions } from 'pino';
import { NO_TRACE_FIELDS, traceLogFields } from './tracing.ts';
import { redactSecrets } from './redact.ts';
import { OBSERVABILITY_DEFAULTS } from './defaults.ts';

export type { Logger };

/** "+79991234567" → "+7***4567": enough to tell numbers apart in an incident, not enough to call. */
export function maskPhone(phone: string | null | undefined): string {
  if (!phone) return '';
  const digits = phone.replace(/\D/g, '');
  if (digits.length <= 4) return '***';
  return `+${digits.slice(0, 1)}***${digits.slice(-4)}`;
}

/** "Иван" → "И***". */
export function maskName(name: string | null | undefined): string {
  if (!name) return '';
  return `${[...name][0]}***`;
}

/**
 * Error properties that carry row values: drizzle's DrizzleQueryError keeps the bound `params` (and
 * the `query`), pg errors the failing row or key in `detail` ("Key (phone)=(+7…)"), the statement
 * context in `where`/`internalQuery`, and some drivers `parameters`.
 */
const VALUE_CARRYING_KEYS = new Set(['params', 'query', 'detail', 'where', 'parameters', 'internalQuery']);
/** drizzle appends the bound values to its message: "Failed query: …\nparams: +7999…,Иван". */
const PARAMS_TAIL = /(?:^|\n| )params:/;
/** pg "data exception" messages quote the offending input: `invalid input syntax for type uuid: "+7999…"`. */
const DATA_EXCEPTION = /^22[0-9A-Z]{3}$/;

type ErrorLike = Error & Record<string, unknown>;

/** An error message with the values in it removed; for call sites that log `err.message` themselves. */
export function safeErrorMessage(err: unknown): string {
  if (!err || typeof (err as { message?: unknown }).message !== 'string') return String(err);
  const e = err as ErrorLike;
  let message = e.message;
  const tail = PARAMS_TAIL.exec(message);
  if (tail) message = message.slice(0, tail.index);
  if (typeof e.code === 'string' && DATA_EXCEPTION.test(e.code)) message = message.replace(/"[^"]*"/g, '"[REDACTED]"');
  return message;
}

/** The stack with its message part replaced by the safe one (the message heads V8's stack). */
function safeStack(err: ErrorLike, message: string): string | undefined {
  if (typeof err.stack !== 'string') return undefined;
  let stack = err.stack;
  if (message !== err.message) {
    const at = stack.indexOf(err.message);
    if (at >= 0) stack = stack.slice(0, at) + message + stack.slice(at + err.message.length);
  }
  if (!PARAMS_TAIL.test(stack) && (message === err.message || !stack.includes(err.message))) return stack;
  // The values are still in there (message rewritten after the stack was captured): frames only.
  return [`${err.name}: ${message}`, ...stack.split('\n').filter((l) => /^\s+at /.test(l))].join('\n');
}

/**
 * Error serializer for every log line (service and Fastify request log): like pino's standard one
 * (type, message, stack, own properties, so SQLSTATE `code`, `constraint`, `table`, `column`,
 * `routine` stay) but without the values of the failing row or query, in the error and in each
 * nested `cause` — a unique violation on a phone must not write the phone to the log.
 */
export function serializeError(err: unknown, depth = 0, seen = new Set<unknown>()): unknown {
  if (!err || typeof err !== 'object' || typeof (err as { message?: unknown }).message !== 'string') return err;
  const e = err as ErrorLike;
  seen.add(e);
  const message = safeErrorMessage(e);
  const out: Record<string, unknown> = {
    type: typeof e.constructor === 'function' ? e.constructor.name : e.name,
    message,
    stack: safeStack(e, message),
  };
  if (typeof e.name === 'string' && e.name !== out.type) out.name = e.name;
  for (const key in e) {
    if (Object.hasOwn(out, key) || key === 'cause' || key === 'errors' || VALUE_CARRYING_KEYS.has(key)) continue;
    const value = e[key];
    if (value && typeof value === 'object' && 'message' in value) {
      if (!seen.has(value) && depth < OBSERVABILITY_DEFAULTS.logMaxCauseDepth) out[key] = serializeError(value, depth + 1, seen);
    } else {
      out[key] = value;
    }
  }
  if (Array.isArray(e.errors)) {
    out.aggregateErrors = e.errors.map((x) => (seen.has(x) ? '[circular]' : serializeError(x, depth + 1, seen)));
  }
  // `cause` is often set as an own non-enumerable property (Error options), so it is read directly.
  if (e.cause !== undefined && !seen.has(e.cause) && depth < OBSERVABILITY_DEFAULTS.logMaxCauseDepth) {
    out.cause = serializeError(e.cause, depth + 1, seen);
  }
  return out;
}

/**
 * pino options shared by the service logger and Fastify's request log: request logs keep method,
 * URL and request id only — no client IP, no headers; secret query parameters are redacted on
 * every line (redact.ts).
 */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    base: { service: 'pin-platform-jobs' },
    timestamp: pino.stdTimeFunctions.isoTime,
    // trace_id / span_id of the active span: a line joins the trace of the work that wrote it.
    mixin: traceLogFields,
    // pino merges the line's fields into the mixin's object; the shared empty one (tracing off, no
    // span) is left alone and the line's fields go out as they are, at no cost.
    mixinMergeStrategy: (fields: object, trace: object) => (trace === NO_TRACE_FIELDS ? fields : Object.assign(trace, fields)),
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.token', '*.accessToken', '*.body'],
      censor: '[REDACTED]',
    },
    // The last step before a line is written, so no field (a URL in an error message, a child
    // logger's bindings) can carry a secret query parameter past it.
    hooks: { streamWrite: redactSecrets },
    serializers: {
      req: (req: { method?: string; url?: string; id?: string }) => ({
        method: req.method,
        url: req.url,
        id: req.id,
      }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
      err: (err: unknown) => serializeError(err),
    },
  };
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return destination ? pino(loggerOptions(level), destination) : pino(loggerOptions(level));
}
