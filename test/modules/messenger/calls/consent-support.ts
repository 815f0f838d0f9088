import assert from 'node:assert/strict';
import type { TestClient } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';
import { ALL_EVENTS, ofEvent, type MessengerApp } from '../support/app.ts';

/** Arrange steps of the conference consent tests (conference-consent, conference-frames-consent). */
export type User = Awaited<ReturnType<MessengerApp['user']>>;

/** Alice opens a Direct chat with bob (accepted by bob unless told not to), both connected. */
export async function direct(m: MessengerApp, accepted = true) {
  const [alice, bob] = [await m.user(), await m.user()];
  const chatId = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [bob.id] })).body.id;
  if (accepted) await m.accept(bob.token, chatId);
  const [ca, cb] = [await m.connect(alice.token, ALL_EVENTS), await m.connect(bob.token, ALL_EVENTS)];
  return { alice, bob, chatId, ca, cb };
}

/** Every frame dispatched to `c` before this one has arrived once this one has: a message of a third user to `u` in a chat of their own. */
export async function fence(m: MessengerApp, u: User, c: TestClient) {
  const carol = await m.user();
  const chatId = (await m.call<{ id: string }>(carol.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [u.id] })).body.id;
  assert.equal((await m.call(carol.token, 'POST', `/api/messenger/chats/${chatId}/messages`, { kind: 'Text', body: 'fence' })).status, 201);
  await m.dispatch();
  await waitFor('the fence', () => ofEvent(c, 'message_received').some((p) => p.Body === 'fence'));
}

/** `u`'s event stream from the start: each event's name and payload. */
export const streamEvents = async (m: MessengerApp, u: User) =>
  (await m.call<{ events: { name: string; payload: { ConferenceId?: string } }[] }>(u.token, 'GET', '/api/events?after=e0')).body.events;
