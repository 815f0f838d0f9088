import { logLevel, type logCreator } from 'kafkajs';
import type { Logger } from '../observability/logger.ts';

/**
 * kafkajs's chatter is for kafkajs developers; only its warnings and errors reach our log, as
 * warn (our own code logs the failures that matter at error, with context), and only
 * a few known fields — never message contents.
 */
const FIELDS = ['groupId', 'memberId', 'topic', 'partition', 'broker', 'clientId', 'retryCount', 'retryTime', 'error'];

/**
 * Messages we cause on purpose: the idempotent producer runs with bounded retries so a dead
 * broker fails a publish in seconds; the outbox re-sends, and consumers dedupe.
 */
const EXPECTED = [/^Limiting retries for the idempotent producer/];

/**
 * The transaction coordinator's refusal of an AddPartitionsToTxn while the previous commit's markers
 * are still being written: the patched eosManager retries it in place within milliseconds (a
 * steady outbox stream meets it many times a minute); one that outlasts the retries fails the send.
 */
const CONCURRENT_TXN = /concurrent operation on the same transaction/;
const expected = (entry: { message: string; error?: unknown }): boolean =>
  EXPECTED.some((re) => re.test(entry.message)) ||
  (entry.message.startsWith('Response AddPartitionsToTxn') && typeof entry.error === 'string' && CONCURRENT_TXN.test(entry.error));

export const KAFKA_LOG_LEVEL = logLevel.WARN;

export function kafkaLogCreator(log: Logger): logCreator {
  return () =>
    ({ namespace, level, log: entry }) => {
      if (level > logLevel.WARN || expected(entry)) return;
      const fields: Record<string, unknown> = { kafka: namespace };
      for (const f of FIELDS) if (entry[f] !== undefined) fields[f] = entry[f];
      log.warn(fields, `kafkajs: ${entry.message}`);
    };
}
