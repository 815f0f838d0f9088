import type { Admin } from '@platformatic/kafka';
import type { TopicSpec } from './bus.ts';
import type { LagAdmin } from './kafka-lag.ts';
import { kafkaErrorTypes } from './kafka-util.ts';

/** The admin work of the @platformatic/kafka bus: topic creation, watermarks and committed offsets in the shapes kafka-lag.ts reads. */

const LATEST = -1n;
const EARLIEST = -2n;

async function partitionsOf(admin: Admin, topic: string): Promise<number[]> {
  const meta = await admin.metadata({ topics: [topic], forceUpdate: true });
  const n = meta.topics.get(topic)?.partitionsCount ?? 0;
  return Array.from({ length: n }, (_, i) => i);
}

/** Per partition: the log start (low) and the offset after its last record, transaction markers included (high). */
export async function topicOffsets(admin: Admin, topic: string): Promise<{ partition: number; low: string; high: string }[]> {
  const partitions = await partitionsOf(admin, topic);
  const at = (timestamp: bigint) => admin.listOffsets({ topics: [{ name: topic, partitions: partitions.map((partitionIndex) => ({ partitionIndex, timestamp })) }] });
  const [high, low] = await Promise.all([at(LATEST), at(EARLIEST)]);
  const lows = new Map((low[0]?.partitions ?? []).map((p) => [p.partitionIndex, p.offset]));
  return (high[0]?.partitions ?? []).map((p) => ({ partition: p.partitionIndex, high: String(p.offset), low: String(lows.get(p.partitionIndex) ?? 0n) }));
}

/** kafka-lag.ts's two reads on this client (kafkajs's Admin has them as they are). */
export function lagAdmin(admin: Admin): LagAdmin {
  return {
    fetchTopicOffsets: (topic) => topicOffsets(admin, topic),
    async fetchOffsets({ groupId, topics }) {
      const [group] = await admin.listConsumerGroupOffsets({ groups: [groupId] });
      return topics.map((topic) => ({
        partitions: (group?.topics.find((t) => t.name === topic)?.partitions ?? []).map((p) => ({ partition: p.partitionIndex, offset: String(p.committedOffset) })),
      }));
    },
  };
}

/** kafka-util.ts's createMissingTopics on this client: creates what is missing, waits for every partition's leader. */
export async function createMissingTopics(admin: Admin, topics: readonly TopicSpec[], timeoutMs: number): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((t) => !existing.has(t.name));
  // One request per distinct set of configs: the library takes configs per request, not per topic.
  const byConfig = new Map<string, TopicSpec[]>();
  for (const t of missing) {
    const k = JSON.stringify(t.configEntries ?? []);
    byConfig.set(k, [...(byConfig.get(k) ?? []), t]);
  }
  for (const [configs, list] of byConfig) {
    try {
      await admin.createTopics({ topics: list.map((t) => ({ topic: t.name, partitions: t.partitions, replicas: -1 })), configs: JSON.parse(configs) as { name: string; value: string }[] });
    } catch (err) {
      // Another replica created one first.
      if (!kafkaErrorTypes(err).has('TOPIC_ALREADY_EXISTS')) throw err;
    }
  }
  const deadline = Date.now() + timeoutMs;
  for (const t of missing) {
    for (;;) {
      const meta = await admin.metadata({ topics: [t.name], forceUpdate: true }).catch(() => undefined);
      const parts = meta?.topics.get(t.name)?.partitions;
      if (parts && parts.length > 0 && parts.every((p) => p.leader >= 0)) break;
      if (Date.now() > deadline) throw new Error(`topics have no leader after ${timeoutMs} ms: ${t.name}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return missing.map((t) => t.name);
}
