import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/** Query parameters whose values are credentials (SignalR clients send the JWT as `access_token`). */
const SECRET_QUERY = /([?&](?:access_token|token)=)[^&#]*/gi;

export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, '$1[REDACTED]');
}

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
 * pino options shared by the service logger and Fastify's request log: request logs keep method,
 * path and request id only — no client IP, no headers, no credentials in the query string.
 */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    base: { service: 'pin-platform-jobs' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.token', '*.accessToken', '*.body'],
      censor: '[REDACTED]',
    },
    serializers: {
      req: (req: { method?: string; url?: string; id?: string }) => ({
        method: req.method,
        url: req.url === undefined ? undefined : redactUrl(req.url),
        id: req.id,
      }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
      err: pino.stdSerializers.err,
    },
  };
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return destination ? pino(loggerOptions(level), destination) : pino(loggerOptions(level));
}
