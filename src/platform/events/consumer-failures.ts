import { causeChain, connectionLostIn, pgErrorOf } from '../errors/index.ts';
import { PoisonMessageError } from './errors.ts';
import { isKafkaUnreachable } from './kafka-util.ts';

/** Dead-letter code of a message that failed its consumer's maxAttempts (10 unless it sets its own) times in a row with an error of its own. */
export const CONSUMER_RETRIES_EXHAUSTED = 'CONSUMER_RETRIES_EXHAUSTED';

/**
 * SQLSTATE classes that say the database (not the message) is in trouble, or that a retry is the
 * cure: 08 connection exception, 40 transaction rollback (serialization failure, deadlock),
 * 53 insufficient resources, 57 operator intervention (shutdown, statement timeout), 58 system
 * error; 55P03 lock not available.
 */
const TRANSIENT_SQLSTATE_CLASSES = new Set(['08', '40', '53', '57', '58']);

/**
 * Whether a failed attempt may be the message's own fault, so that it counts towards the
 * consumer's maxAttempts. An outage (database or broker unreachable, shutdown, timeouts, a
 * serialization failure or deadlock) never counts: it would dead-letter healthy messages while a
 * dependency is down. Everything else does: a TypeError, a unique or foreign-key violation that
 * the same message hits every time, a missing table.
 */
export function countsAsAttempt(err: unknown): boolean {
  const state = pgErrorOf(err)?.code;
  if (state !== undefined) return !(TRANSIENT_SQLSTATE_CLASSES.has(state.slice(0, 2)) || state === '55P03');
  if (isKafkaUnreachable(err) || connectionLostIn(err)) return false;
  for (const e of causeChain(err)) if (e instanceof Error && e.name === 'EventBusUnavailableError') return false;
  return true;
}

/**
 * The class of an error, safe for DLQ headers and logs: the PostgreSQL SQLSTATE (and constraint,
 * a schema name) when there is one, else the thrown error's name. Never a message: driver
 * messages quote row values, and handler messages may carry anything.
 */
export function errorClassOf(err: unknown): { name: string; sqlState?: string; constraint?: string } {
  const pgErr = pgErrorOf(err);
  if (pgErr) return { name: 'DatabaseError', sqlState: pgErr.code, ...(pgErr.constraint ? { constraint: pgErr.constraint } : {}) };
  if (err instanceof Error) return { name: err.name || 'Error' };
  return { name: typeof err };
}

/** A message given up after `attempts` failed attempts; dead-lettered with the last error's class. */
export class RetriesExhaustedError extends PoisonMessageError {
  readonly attempts: number;
  readonly errorClass: ReturnType<typeof errorClassOf>;
  constructor(attempts: number, lastError: unknown) {
    const errorClass = errorClassOf(lastError);
    const what = errorClass.sqlState
      ? `SQLSTATE ${errorClass.sqlState}${errorClass.constraint ? ` (constraint ${errorClass.constraint})` : ''}`
      : errorClass.name;
    super(CONSUMER_RETRIES_EXHAUSTED, `handler failed ${attempts} times in a row, last with ${what}`, { cause: lastError });
    this.name = 'RetriesExhaustedError';
    this.attempts = attempts;
    this.errorClass = errorClass;
  }
}

/**
 * Consecutive failed attempts of the message at the head of each partition (in memory: a restart
 * or a rebalance to another replica starts the count again, which only delays the dead letter).
 * `all` drives the backoff; `counted` (the attempts that may be the message's fault) the limit.
 */
export function createAttemptTracker() {
  const heads = new Map<number, { offset: string; all: number; counted: number }>();
  return {
    /** Records a failure of (partition, offset); returns the counts so far including this one. */
    failed(partition: number, offset: string, err: unknown): { all: number; counted: number } {
      let head = heads.get(partition);
      if (!head || head.offset !== offset) heads.set(partition, (head = { offset, all: 0, counted: 0 }));
      head.all += 1;
      if (countsAsAttempt(err)) head.counted += 1;
      return { all: head.all, counted: head.counted };
    },
    /** The message is done (handled, skipped or dead-lettered). */
    done(partition: number): void {
      heads.delete(partition);
    },
  };
}
