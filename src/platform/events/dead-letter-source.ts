import type { Db } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import type { Logger } from '../observability/index.ts';
import { traceIdOf } from '../observability/tracing.ts';
import type { FailureCursor, FailureFilter, FailureRow, FailureSource } from '../ops/index.ts';
import { newId, type Clock } from '../time.ts';
import type { IncomingMessage, OutgoingMessage, TopicReader } from './bus.ts';
import type { ResolvedConsumer } from './consumer-definition.ts';
import { replayDeadLetter, replayedAmong, replayPlanOf } from './dead-letter-replay.ts';
import { DLQ_HEADER, wireText } from './dead-letter.ts';
import { HEADER } from './envelope.ts';
import { EVENTS_DEFAULTS } from './defaults.ts';

/**
 * The ops console's view of dead-lettered consumer records (the `<topic>.dlq` topics) and their
 * `replay` (dead-letter-replay.ts: the original published again to its origin topic, its
 * consumer's inbox row deleted first). A replayed record stays in its topic, so the replays table
 * says which ones are done: they are listed no more. Each look reads every DLQ topic to its end
 * with the whole-topic reader (a throwaway consumer group per topic, nothing committed) and keeps
 * the last `keepPerTopic` records of each, so memory stays bounded whatever the topic holds; one
 * read answers every look for `freshMs`. Kafka only: on the in-process bus nothing is kept to read.
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
  db: Db;
  clock: Clock;
  /** The consumers of this app: whose inbox row a replay deletes, by the dead letter's origin topic. */
  consumers: readonly ResolvedConsumer[];
  /** The bus's publish: the replayed original goes to its origin topic. */
  publish(messages: readonly OutgoingMessage[]): Promise<void>;
}

const FIELDS = ['originTopic', 'eventType', 'key', 'messageId'] as const;


export function deadLetterRow(m: IncomingMessage): FailureRow {
  const h = (name: string) => wireText(m.headers[name]);
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
      key: wireText(m.key),
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
  if (f.ids && !f.ids.includes(row.id)) return false;
  return f.field === undefined || row.fields[f.field] === f.value;
}

/** After the cursor in the list's (at, id) order, compared as the list is sorted (the ops console's pages). */
const isAfter = (row: FailureRow, after: FailureCursor): boolean => (row.at.localeCompare(after.at.toISOString()) || row.id.localeCompare(after.id)) > 0;

/** A dead letter as listed, with the record it came from (what a replay publishes). */
interface Kept {
  row: FailureRow;
  message: IncomingMessage;
}

export function deadLetterSource(deps: DeadLetterSourceDeps): FailureSource {
  let last: { at: number; rows: Kept[] } | undefined;
  let reading: Promise<Kept[]> | undefined;

  const readTopic = async (topic: string): Promise<Kept[]> => {
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
    return kept.slice(-deps.keepPerTopic).map((message) => ({ row: deadLetterRow(message), message }));
  };

  const read = (): Promise<Kept[]> => {
    if (last && performance.now() - last.at < deps.freshMs) return Promise.resolve(last.rows);
    reading ??= Promise.all(deps.topics().map(readTopic))
      .then((perTopic) => {
        const all = perTopic.flat().sort((a, b) => a.row.at.localeCompare(b.row.at) || a.row.id.localeCompare(b.row.id));
        last = { at: performance.now(), rows: all };
        return all;
      })
      .catch((err: unknown) => {
        deps.log.warn({ err }, 'dead-letter topics could not be read');
        throw new AppError('SERVICE_UNAVAILABLE', 'the dead-letter topics cannot be read now (Kafka); try again shortly', 503, { retryAfterSeconds: EVENTS_DEFAULTS.deadLetterRetryAfterSeconds });
      })
      .finally(() => (reading = undefined));
    return reading;
  };

  /** The dead letters the filter matches and no replay has taken, oldest first. */
  const waiting = async (f: FailureFilter): Promise<Kept[]> => {
    const matching = (await read()).filter((k) => matches(k.row, f));
    const replayed = await replayedAmong(deps.db, matching.map((k) => k.row.id));
    return matching.filter((k) => !replayed.has(k.row.id));
  };

  /** Replays up to `limit` of them; one that cannot be replayed is skipped with a warning and stays listed. */
  const replay = async (f: FailureFilter, limit: number, actor: string): Promise<number> => {
    let replayed = 0;
    for (const { row, message } of await waiting(f)) {
      if (replayed >= limit) break;
      const plan = replayPlanOf(message, deps.consumers);
      if (!plan.ok) {
        deps.log.warn({ deadLetterId: row.id, why: plan.why }, 'dead letter not replayed');
        continue;
      }
      if (await replayDeadLetter(deps, row.id, plan, actor, deps.clock.now())) {
        replayed++;
        deps.log.info({ deadLetterId: row.id, originTopic: plan.original.topic, consumer: plan.consumer, actor }, 'dead letter replayed');
      }
    }
    return replayed;
  };

  return {
    kind: 'consumer-dead-letters',
    title: 'Dead-lettered consumer records (<topic>.dlq): replay publishes the original again, to be handled anew',
    alert: 'ConsumerDeadLettered',
    fields: FIELDS,
    actions: ['replay'],
    list: async (f, limit, after) => (await waiting(f)).filter((k) => !after || isAfter(k.row, after)).slice(0, limit).map((k) => k.row),
    count: async (f) => (await waiting(f)).length,
    act: (_action, f, limit, actor) => replay(f, limit, actor),
  };
}
