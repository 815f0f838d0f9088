import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/platform/observability/index.ts';

export interface LogCapture {
  /** A logger writing here. */
  log: Logger;
  /** The pino destination, for code that builds its own logger. */
  stream: Writable;
  lines(): Record<string, unknown>[];
  text(): string;
}

/** A pino logger (and its destination) keeping the JSON lines in memory. */
export function logCapture(level = 'debug'): LogCapture {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  const text = () => chunks.join('');
  return {
    log: createLogger(level, stream),
    stream,
    text,
    lines: () =>
      text()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
