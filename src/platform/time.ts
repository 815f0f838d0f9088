import { v7 as uuidv7 } from 'uuid';

/** Every worker and operation reads time from a Clock, so tests move time instead of sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests set and advance by hand. */
export class ManualClock implements Clock {
  private current: Date;
  constructor(start: Date | string = '2026-01-01T00:00:00Z') {
    this.current = new Date(start);
  }
  now(): Date {
    return new Date(this.current);
  }
  set(to: Date | string): void {
    this.current = new Date(to);
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

/** Ids are UUIDv7: time-ordered, so insertion order is id order. */
export const newId = (): string => uuidv7();

/** The promise's outcome, or a rejection naming `what` after `ms` (a dead peer never answers). */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  promise.catch(() => undefined); // a late rejection after the timeout is not unhandled
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Units for durations written in milliseconds (defaults, cutoffs): the one place they are spelled. */
export const SECOND_MS = 1000;
export const MINUTE_MS = 60 * SECOND_MS;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;
