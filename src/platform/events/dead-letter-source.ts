import { AppError } from '../http/index.ts';
import type { Logger } from '../observability/index.ts';
import { traceIdOf } from '../observability/tracing.ts';
import type { FailureFilter, FailureRow, FailureSource } from '../ops/index.ts';
import { newId } from '../time.ts';
import type { IncomingMessage, TopicReader } from './bus.ts';
import { DLQ_HEADER } from './dead-letter.ts';
import { HEADER } from './envelope.ts';

/**
 * The ops console's view of dead-lettered consumer records (the `<topic>.dlq` topics), read-only:
 * a replay is a new publish under a new message id (runbook ConsumerDeadLettered), not a row to
 * flip. Each look reads every DLQ topic to its end with the whole-topic reader (a throwaway
 * consumer group per topic, nothing committed) and keeps the last `keepPerTopic` records of each,
 * so memory stays bounded whatever the topic holds; one read answers every look for `freshMs`.
 * Kafka only: on the in-process bus nothing is kept to read.
 */

export interface DeadLetterSourceDeps {
  /** The physical DLQ topics (one per consumed topic). */
  topics: () => readonly string[];
  openReader: (physicalTopic: string, groupId: string) => Promise<TopicReader>;
  /** Prefix of the throwaway groups' names (the client id; tests add their topic prefix). */
  groupPrefix: string;
  keepPerTopic: number;
  freshMs: number;
  log: Logger;
}

const FIELDS = ['originTopic', 'eventType', 'key', 'messageId'] as const;
/** Retry-After of the 503 while Kafka cannot be read. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

const text = (v: unknown): string | null => {
  const one = Array.isArray(v) ? v[0] : v;
  return one === undefined || one === null ? null : Buffer.isBuffer(one) ? one.toString('utf8') : String(one);
};

export function deadLetterRow(m: IncomingMessage): FailureRow {
  const h = (name: string) => text(m.headers[name]);
  const at = m.timestamp === undefined ? new Date(0) : new Date(Number(m.timestamp));
  return {
    id: `${m.topic}/${m.partition}/${m.offset}`,
    at: at.toISOString(),
    errorCode: h(DLQ_HEADER.code),
    traceId: traceIdOf(h('traceparent')),
    fields: {
      originTopic: h(DLQ_HEADER.originTopic),
      originPartition: h(DLQ_HEADER.originPartition),
      originOffset: h(DLQ_HEADER.originOffset),
      eventType: h(HEADER.eventType),
      messageId: h(HEADER.messageId),
      key: text(m.key),
      reason: h(DLQ_HEADER.reason),
      errorClass: h(DLQ_HEADER.errorClass),
      droppedBytes: h(DLQ_HEADER.droppedBytes),
    },
  };
}

function matches(row: FailureRow, f: FailureFilter): boolean {
  const at = new Date(row.at);
  if ((f.from && at < f.from) || (f.to && at >= f.to)) return false;
  if (f.errorCode !== undefined && row.errorCode !== f.errorCode) return false;
  return f.field === undefined || row.fields[f.field] === f.value;
}

export function deadLetterSource(deps: DeadLetterSourceDeps): FailureSource {
  let last: { at: number; rows: FailureRow[] } | undefined;
  let reading: Promise<FailureRow[]> | undefined;

  const readTopic = async (topic: string): Promise<FailureRow[]> => {
    const reader = await deps.openReader(topic, `${deps.groupPrefix}.ops-dlq.${newId()}`);
    let kept: IncomingMessage[] = [];
    try {
      await reader.readToEnd((messages) => {
        kept.push(...messages);
        if (kept.length > 2 * deps.keepPerTopic) kept = kept.slice(-deps.keepPerTopic);
      });
    } finally {
      await reader.close();
    }
    return kept.slice(-deps.keepPerTopic).map(deadLetterRow);
  };

  const rows = (): Promise<FailureRow[]> => {
    if (last && performance.now() - last.at < deps.freshMs) return Promise.resolve(last.rows);
    reading ??= Promise.all(deps.topics().map(readTopic))
      .then((perTopic) => {
        const all = perTopic.flat().sort((a, b) => a.at.localeCompare(b.at) || a.id.localeCompare(b.id));
        last = { at: performance.now(), rows: all };
        return all;
      })
      .catch((err: unknown) => {
        deps.log.warn({ err }, 'dead-letter topics could not be read');
        throw new AppError('SERVICE_UNAVAILABLE', 'the dead-letter topics cannot be read now (Kafka); try again shortly', 503, { retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS });
      })
      .finally(() => (reading = undefined));
    return reading;
  };

  return {
    kind: 'consumer-dead-letters',
    title: 'Dead-lettered consumer records (<topic>.dlq, read-only: replay per the runbook)',
    alert: 'ConsumerDeadLettered',
    fields: FIELDS,
    actions: [],
    list: async (f, limit) => (await rows()).filter((r) => matches(r, f)).slice(0, limit),
    count: async (f) => (await rows()).filter((r) => matches(r, f)).length,
    act: async () => 0,
  };
}
