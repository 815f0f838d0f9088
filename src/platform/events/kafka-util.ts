import type { Admin, Message } from 'kafkajs';
import { causeChain } from '../errors/index.ts';
import type { OutgoingMessage, TopicSpec } from './bus.ts';

/** Pure helpers of the Kafka adapter, and the topic-leader wait shared with the test support. */

/** Errors meaning "could not talk to Kafka", as opposed to "Kafka refused these messages". */
const UNREACHABLE = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSNoBrokerAvailableError',
  'KafkaJSLockTimeout',
]);

export function isKafkaUnreachable(err: unknown): boolean {
  for (const e of causeChain(err)) if (e instanceof Error && UNREACHABLE.has(e.name)) return true;
  return false;
}

/** The broker refused a record (batch) larger than the topic's max.message.bytes. */
export function isMessageTooLarge(err: unknown): boolean {
  for (const e of causeChain(err)) if ((e as { type?: unknown }).type === 'MESSAGE_TOO_LARGE') return true;
  return false;
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
