import { ChatSequencer, toChatMessage, type ChatMessage } from '@pin/messenger-client';
import { connectClient, type TestClient } from '../../../support/signalr.ts';
import { FAST_BATCH, repeat, type Replica, type Stack } from '../stack.ts';
import { countBy, loadProblems, missingProblem, type Workload } from '../workload.ts';

/**
 * Seed 000, RealtimeDispatchJob: Alice sends messages through REST all run long; Bob's official
 * @microsoft/signalr client sits on the replica that is never killed and gets the pushes through the
 * Redis backplane from whichever replica dispatches. Every message must reach him — as a push, not
 * through a REST refill. Repeated pushes are counted and bounded; what the application would show is
 * the pushes passed through the client library's own dedupe (ChatSequencer, by Seq), which must hand
 * each message over exactly once.
 */
export async function realtimeWorkload(stack: Stack, front: Replica, alice: string, bob: string): Promise<Workload> {
  const [aliceToken, bobToken] = await Promise.all([stack.userToken(alice), stack.userToken(bob)]);
  const chat = await stack.call<{ id: string }>(front, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Faults', memberUserIds: [bob] }, aliceToken);
  if (chat.status !== 201) throw new Error(`create chat: ${chat.status} ${JSON.stringify(chat.body)}`);
  // The client follows the chat from what it had at creation (system messages, if any, come before).
  const { rows } = await stack.database.pool.query<{ seq: number }>(`select last_seq::int as seq from messenger.chats where id = $1`, [chat.body.id]);
  const followedFrom = rows[0]!.seq;
  const client: TestClient = await connectClient(`${front.url}/hubs/messenger`, bobToken, { events: ['message_received'] });
  const sent: string[] = [];
  const load = repeat(250, async () => {
    const res = await stack.call<{ id: string }>(front, 'POST', `/api/messenger/chats/${chat.body.id}/messages`, { kind: 'Text', body: `m${sent.length}` }, aliceToken);
    if (res.status !== 201) throw new Error(`send: ${res.status} ${JSON.stringify(res.body)}`);
    sent.push(res.body.id);
  });
  const received = () => countBy(client.received, (r) => (r.payload as { MessageId: string }).MessageId);
  /** The pushes as the app sees them after the client library's dedupe and ordering. */
  const shown = () => {
    const sequencer = new ChatSequencer<ChatMessage>(followedFrom);
    return client.received.flatMap((r) => sequencer.offer(toChatMessage(r.payload as Record<string, unknown>)).deliver);
  };

  return {
    fault: 'sigkill-realtime-dispatch',
    progress: async () => (await stack.database.pool.query<{ n: number }>(`select count(*)::int as n from push.realtime_outbox where status = 'Done'`)).rows[0]!.n,
    stop: () => load.stop(),
    drained: async () => {
      const got = received();
      return sent.every((id) => got.has(id));
    },
    async verdict(run) {
      const { kills } = run;
      const got = received();
      const duplicated = client.received.length - got.size;
      const missing = sent.filter((id) => !got.has(id));
      const visible = shown();
      const visibleRepeats = visible.length - new Set(visible.map((m) => m.messageId)).size;
      const notShown = sent.length - (visible.length - visibleRepeats);
      const quarantined = (
        await stack.database.pool.query<{ n: number }>(`select count(*)::int as n from push.realtime_outbox where status = 'Quarantined'`)
      ).rows[0]!.n;
      return {
        expected: sent.length,
        seen: sent.length - missing.length,
        duplicated,
        problems: [
          ...missingProblem('pushes of sent messages', missing),
          // A row is pushed again only when a kill cut it between push and outcome: one batch per kill.
          ...(duplicated > kills * FAST_BATCH.realtime ? [`${duplicated} repeated pushes, more than one batch per kill`] : []),
          ...(visibleRepeats > 0 ? [`${visibleRepeats} messages shown twice after the client library's dedupe`] : []),
          ...(missing.length === 0 && notShown > 0 ? [`${notShown} pushed messages never shown by the client library (a Seq gap it would refill)`] : []),
          ...(quarantined > 0 ? [`${quarantined} realtime_outbox rows Quarantined`] : []),
          ...(client.closed ? [`the hub client on the surviving replica was closed: ${String(client.closedWith)}`] : []),
          ...loadProblems('send', load, run),
        ],
      };
    },
  };
}
