/**
 * The one redaction of query parameters that carry a secret or a person's data, used by every log
 * line (logger.ts) and every exported span (tracing-sdk.ts): whatever writes a URL — Fastify's
 * request log, @fastify/otel's `url.path`, the HTTP instrumentation's `url.query`/`url.full`, an
 * error message quoting the URL — the value never leaves the process.
 *
 * Redacted: `access_token` (browser SignalR clients send the JWT there), `id` (the hub's connection
 * token, a bearer credential until it is used), `phone` (contact search), and any parameter whose
 * name contains `token` or `secret`. Names are compared case-insensitively after percent-decoding,
 * so `Access%5FToken=` is caught too; the value is replaced whatever its encoding.
 */

export const REDACTED = '[REDACTED]';

const NAMED = new Set(['access_token', 'id', 'phone']);

/**
 * `name=value` after the start of the text, `?`, `&`, `;` or `"` (the start of a JSON string in a
 * log line). Names and values stop at URL and JSON delimiters, so a JSON line keeps its shape; a
 * JSON escape (`\"`, `\u0022`) is part of the value, so a hostile value cannot end it early.
 */
const QUERY_PAIR = /(^|[?&;"])([^=&?#;"\s\\]+)=((?:[^&#;"\s\\]|\\.)*)/g;

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' ')).toLowerCase();
  } catch {
    return name.toLowerCase(); // a malformed escape: judge the name as written
  }
}

export function isSecretParameter(name: string): boolean {
  const n = decodeName(name);
  return NAMED.has(n) || n.includes('token') || n.includes('secret');
}

/** `text` with the value of every secret query parameter in it replaced by [REDACTED]. */
export function redactSecrets(text: string): string {
  if (!text.includes('=')) return text; // most strings: no pair at all, no regex run
  return text.replace(QUERY_PAIR, (pair, sep: string, name: string, value: string) =>
    value === REDACTED || !isSecretParameter(name) ? pair : `${sep}${name}=${REDACTED}`,
  );
}
