import type { Admin, Message } from 'kafkajs';
import { causeChain } from '../errors/index.ts';
import type { OutgoingMessage, TopicSpec } from './bus.ts';

/** Pure helpers of the Kafka adapter, and the topic-leader wait shared with the test support. */

/**
 * Every error inside `err`: its cause chain and, for @platformatic/kafka, the errors a MultipleErrors
 * (ResponseError) carries, depth first. Both clients' errors are classified by walking it.
 */
export function* kafkaErrorTree(err: unknown, depth = 0): Generator<unknown> {
  if (depth > 4) return;
  for (const e of causeChain(err)) {
    yield e;
    const inner = (e as { errors?: unknown }).errors;
    if (Array.isArray(inner)) for (const x of inner) yield* kafkaErrorTree(x, depth + 1);
  }
}

/**
 * The error at the bottom of `err`: @platformatic/kafka wraps the cause that matters ("SASL
 * authentication failed", a TLS verification code) in "metadata failed 4 times" and "Cannot connect
 * to any broker"; its first inner error, down to the last, is what a log line or a refusal should name.
 */
export function kafkaRootCause(err: unknown): unknown {
  let e = err;
  for (let depth = 0; depth < 12 && e && typeof e === 'object'; depth++) {
    const inner = (e as { errors?: unknown }).errors;
    const next = Array.isArray(inner) && inner.length > 0 ? inner[0] : ((e as { cause?: unknown }).cause ?? (e as { originalError?: unknown }).originalError);
    if (!next || typeof next !== 'object') break;
    e = next;
  }
  return e;
}

/** The error a log line or a stored last_error shows: the root of a @platformatic/kafka wrapper (one with inner errors), else `err` itself. */
export function kafkaShownError(err: unknown): unknown {
  return Array.isArray((err as { errors?: unknown } | null)?.errors) ? kafkaRootCause(err) : err;
}

/** A Kafka protocol error's name (UNKNOWN_TOPIC_OR_PARTITION…): kafkajs's `type`, @platformatic/kafka's `apiId`. */
export function kafkaErrorTypes(err: unknown): Set<string> {
  const types = new Set<string>();
  for (const e of kafkaErrorTree(err)) {
    const t = (e as { type?: unknown; apiId?: unknown }).type ?? (e as { apiId?: unknown }).apiId;
    if (typeof t === 'string') types.add(t);
  }
  return types;
}

/** Errors meaning "could not talk to Kafka", as opposed to "Kafka refused these messages". */
const UNREACHABLE = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSNoBrokerAvailableError',
  'KafkaJSLockTimeout',
]);
/** @platformatic/kafka's codes for the same (its TimeoutError carries the network code too). */
const UNREACHABLE_CODES = new Set(['PLT_KFK_NETWORK', 'PLT_KFK_TIMEOUT']);

export function isKafkaUnreachable(err: unknown): boolean {
  for (const e of kafkaErrorTree(err)) {
    if (!(e instanceof Error)) continue;
    if (UNREACHABLE.has(e.name) || UNREACHABLE_CODES.has(String((e as { code?: unknown }).code))) return true;
  }
  return false;
}

/** The broker refused a record (batch) larger than the topic's max.message.bytes. */
export function isMessageTooLarge(err: unknown): boolean {
  return kafkaErrorTypes(err).has('MESSAGE_TOO_LARGE');
}

const size = (v: Buffer | string | null): number => (v === null ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length);

function messageBytes(m: OutgoingMessage): number {
  let bytes = size(m.key) + size(m.value) + 16;
  for (const [name, value] of Object.entries(m.headers)) bytes += name.length + size(value);
  return bytes;
}

/** Splits into consecutive chunks of at most `maxBytes` (a single bigger message goes alone). */
export function chunkByBytes(messages: readonly OutgoingMessage[], maxBytes: number): OutgoingMessage[][] {
  const chunks: OutgoingMessage[][] = [];
  let current: OutgoingMessage[] = [];
  let bytes = 0;
  for (const m of messages) {
    const b = messageBytes(m);
    if (current.length > 0 && bytes + b > maxBytes) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(m);
    bytes += b;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

export function byTopic(messages: readonly OutgoingMessage[]): { topic: string; messages: Message[] }[] {
  const topics = new Map<string, Message[]>();
  for (const m of messages) {
    let list = topics.get(m.topic);
    if (!list) topics.set(m.topic, (list = []));
    list.push({ key: m.key, value: m.value, headers: m.headers });
  }
  return [...topics].map(([topic, list]) => ({ topic, messages: list }));
}

/** Polls topic metadata until every partition of every topic has a leader. */
export async function waitForLeaders(admin: Admin, topics: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { topics: meta } = await admin.fetchTopicMetadata({ topics });
      if (meta.length === topics.length && meta.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    if (Date.now() > deadline) throw new Error(`topics have no leader after ${timeoutMs} ms: ${topics.join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Creates the topics the cluster lacks and waits for their leaders; the names created ([] when none
 * was missing). Another replica creating them first is fine. kafkajs's own waitForLeaders gives up
 * on UNKNOWN_TOPIC_OR_PARTITION, which a KRaft broker answers until its metadata catches up.
 */
export async function createMissingTopics(admin: Admin, topics: readonly TopicSpec[], timeoutMs: number): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((t) => !existing.has(t.name));
  if (missing.length === 0) return [];
  await admin.createTopics({
    waitForLeaders: false,
    topics: missing.map((t) => ({ topic: t.name, numPartitions: t.partitions, ...(t.configEntries ? { configEntries: t.configEntries } : {}) })),
  });
  await waitForLeaders(admin, missing.map((t) => t.name), timeoutMs);
  return missing.map((t) => t.name);
}
