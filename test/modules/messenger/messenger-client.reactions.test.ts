import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessengerError, type HubEvent, type ReactionPayload } from '../../../packages/messenger-client/src/index.ts';
import { messengerApp } from './support/app.ts';
import { clientOf } from './support/library-client.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * Reactions through the client library against the running service: react and unreact answer the
 * message's reactions as the caller sees them, history carries them per message, and the other
 * member's client gets reaction_changed (by name and as an `event`).
 */

describe('client library: reactions', () => {
  test('react, unreact, reactions in history, and reaction_changed at the other member', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const [a, b] = [clientOf(m, alice.token), clientOf(m, bob.token)];
    const chat = await a.createChat({ kind: 'Group', title: 'G', memberUserIds: [bob.id] });
    await b.acceptChat(chat.id);
    const sent = await m.call<{ id: string }>(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'react to me' });
    const messageId = sent.body.id;
    const byName: ReactionPayload[] = [];
    const asEvent: HubEvent[] = [];
    a.on('reaction_changed', (p) => byName.push(p));
    a.on('event', (e) => e.name === 'reaction_changed' && asEvent.push(e));
    await a.start();

    assert.deepEqual(await b.react(chat.id, messageId, '👍'), [{ emoji: '👍', count: 1, mine: true }]);
    assert.deepEqual(await a.react(chat.id, messageId, '👍'), [{ emoji: '👍', count: 2, mine: true }]);
    await m.dispatch();
    await waitFor("bob's reaction at alice's client", () => byName.some((p) => p.UserId === bob.id));
    const frame = byName.find((p) => p.UserId === bob.id)!;
    assert.deepEqual([frame.ChatId, frame.MessageId, frame.Emoji, frame.Added], [chat.id, messageId, '👍', true]);
    assert.ok(asEvent.some((e) => e.name === 'reaction_changed' && e.payload.UserId === bob.id), 'also handed over as an event');

    const page = await b.history(chat.id);
    assert.deepEqual(page.items.map((x) => x.reactions), [[{ emoji: '👍', count: 2, mine: true }]]);
    assert.deepEqual(await b.unreact(chat.id, messageId, '👍'), [{ emoji: '👍', count: 1, mine: false }]);
    assert.deepEqual(await b.unreact(chat.id, messageId, '👍'), [{ emoji: '👍', count: 1, mine: false }], 'idempotent');
    await m.dispatch();
    await waitFor('the removal at alice', () => byName.some((p) => p.UserId === bob.id && !p.Added));

    const refused = await b.react(chat.id, messageId, 'thumbs up').then(() => assert.fail('resolved'), (e: unknown) => e);
    assert.ok(refused instanceof MessengerError);
    assert.deepEqual([refused.status, refused.code], [400, 'MSG_REACTION_INVALID']);
  });
});
