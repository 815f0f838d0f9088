import type { Admin } from '@platformatic/kafka';
import { topicOffsets } from '../../src/platform/events/platformatic-admin.ts';

/**
 * The admin reads and writes the tests make, on @platformatic/kafka. The answers keep the shapes the
 * tests were written against (offsets as strings, arrays instead of the library's Maps), so the files
 * that look into the broker read them in one place's terms instead of each mapping the library's.
 */
export interface TestAdmin {
  listTopics(): Promise<string[]>;
  fetchTopicMetadata(o: { topics: string[] }): Promise<{ topics: { name: string; partitions: { partitionId: number; leader: number }[] }[] }>;
  /** Per partition: the log start (low) and the offset after its last record, transaction markers included (high). */
  fetchTopicOffsets(topic: string): Promise<{ partition: number; low: string; high: string }[]>;
  /** The group's committed offset per partition of each topic; '-1' where it committed none. */
  fetchOffsets(o: { groupId: string; topics: string[] }): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>;
  listGroups(): Promise<{ groups: { groupId: string; state: string }[] }>;
  describeGroups(groupIds: string[]): Promise<{ groups: { groupId: string; state: string; members: { memberId: string; clientId: string }[] }[] }>;
  /** Commits the topic's earliest offsets for the group (which must have no members). */
  resetOffsets(o: { groupId: string; topic: string; earliest: true }): Promise<void>;
}

async function partitionsOf(admin: Admin, topics: string[]): Promise<Map<string, number>> {
  const meta = await admin.metadata({ topics, forceUpdate: true });
  return new Map(topics.map((t) => [t, meta.topics.get(t)?.partitionsCount ?? 0]));
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

export function testAdmin(admin: Admin): TestAdmin {
  return {
    listTopics: () => admin.listTopics(),
    async fetchTopicMetadata({ topics }) {
      const meta = await admin.metadata({ topics, forceUpdate: true });
      return {
        topics: topics.map((name) => ({
          name,
          partitions: (meta.topics.get(name)?.partitions ?? []).map((p, partitionId) => ({ partitionId, leader: p.leader })),
        })),
      };
    },
    fetchTopicOffsets: (topic) => topicOffsets(admin, topic),
    async fetchOffsets({ groupId, topics }) {
      const counts = await partitionsOf(admin, topics);
      const [group] = await admin.listConsumerGroupOffsets({
        groups: [{ groupId, topics: topics.map((name) => ({ name, partitionIndexes: range(counts.get(name)!) })) }],
      });
      return topics.map((topic) => {
        const committed = new Map((group?.topics.find((t) => t.name === topic)?.partitions ?? []).map((p) => [p.partitionIndex, p.committedOffset]));
        return { topic, partitions: range(counts.get(topic)!).map((partition) => ({ partition, offset: String(committed.get(partition) ?? -1n) })) };
      });
    },
    async listGroups() {
      const groups = await admin.listGroups();
      return { groups: [...groups.values()].map((g) => ({ groupId: g.id, state: g.state })) };
    },
    async describeGroups(groupIds) {
      const groups = await admin.describeGroups({ groups: groupIds });
      return {
        groups: groupIds.map((groupId) => {
          const g = groups.get(groupId);
          return { groupId, state: g?.state ?? 'Dead', members: [...(g?.members.values() ?? [])].map((m) => ({ memberId: m.id, clientId: m.clientId })) };
        }),
      };
    },
    async resetOffsets({ groupId, topic }) {
      const offsets = await topicOffsets(admin, topic);
      await admin.alterConsumerGroupOffsets({ groupId, topics: [{ name: topic, partitionOffsets: offsets.map((o) => ({ partition: o.partition, offset: BigInt(o.low) })) }] });
    },
  };
}
