import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestTracing } from '../../../support/tracing.ts';
import { dispatchEnv, insertChat, insertMessage, insertOutbox, uid } from '../support/dispatch.ts';

/**
 * Seed 000 "Traces": beside the kernel's run and batch spans, the dispatcher's own child span per
 * row dispatch, with the row's Kind and ChatId (a row to one user has no ChatId).
 */

const tracing = await startTestTracing();

test('each dispatched row has its own span under the batch, with Kind and ChatId (none on a push to a user)', async () => {
  const env = await dispatchEnv();
  const [alice, bob] = [uid(), uid()];
  const chatId = await insertChat(env.pool, [alice, bob], { lastSeq: 1 });
  const toChat = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: await insertMessage(env.pool, chatId, 1, alice), seq: 1 });
  const toUser = await insertOutbox(env.pool, { kind: 'ContactRequestReceived', targetKind: 'User', targetUserId: bob, refId: uid() });

  const counts = await env.run();
  assert.equal(counts.claimed, 2);

  const batch = tracing.one('messenger-realtime-dispatch batch');
  const rows = tracing.childrenOf(batch).filter((s) => s.name === 'dispatch');
  assert.deepEqual(
    rows.map((s) => ({ id: s.attributes.id, Kind: s.attributes.Kind, ChatId: s.attributes.ChatId })).sort((a, b) => String(a.id).localeCompare(String(b.id))),
    [
      { id: toChat, Kind: 'MessageReceived', ChatId: chatId },
      { id: toUser, Kind: 'ContactRequestReceived', ChatId: undefined },
    ].sort((a, b) => a.id.localeCompare(b.id)),
  );
});
