import type { MessengerError } from './errors.ts';
import type { MessengerEventMap } from './events.ts';
import type { StateChange } from './hub-link.ts';
import type { PendingMessage } from './send-queue.ts';
import type { ChatMessage, SentMessage } from './wire.ts';

/**
 * What `client.on(name, listener)` reports, by name: the listener's arguments. One emitter for
 * everything (the 0.2 option callbacks onMessage, onSent, … still work and are deprecated).
 */

/** The hub events the client hands over as they are (the message ones it sequences itself: `message`, `messageChanged`). */
export type HubEventName = Exclude<keyof MessengerEventMap, 'message_received' | 'message_edited' | 'message_deleted'>;

/** One hub event as a union the app can switch on by `name`: `if (e.name === 'typing') e.payload.UserId`. */
export type HubEvent = { [K in HubEventName]: { name: K; payload: MessengerEventMap[K] } }[HubEventName];

/** An edit or a deletion of a message (message_edited / message_deleted, or a tombstone met in a refill). */
export type ChangedMessage = Partial<ChatMessage> & { chatId: string; messageId: string; seq: number };

/**
 * The service refused the cursor the client resumed from (past the stream's retention: 410
 * MSG_EVENTS_CURSOR_EXPIRED; another deployment's or a malformed one: 400). The events in between
 * cannot be replayed: the client restarts at the stream's head and refills the tracked chats by Seq,
 * and the app should reload its chat list (`chatList()` without a token) and whatever else it keeps
 * from events (calls, contacts, read positions of untracked chats).
 */
export interface ResyncNeeded {
  /** The service's code for the refusal. */
  code: string;
  status: number;
  /** The cursor that was refused. */
  cursor: string;
}

export type ClientEventMap = {
  /** A new message, once, in Seq order per chat (live, refilled or resumed). */
  message: [message: ChatMessage];
  /** An edit or deletion, once per change. */
  messageChanged: [message: ChangedMessage];
  /** Every other hub event, once each, live or resumed. */
  event: [event: HubEvent];
  /** The connection's state changed (with the error that caused a loss or a final refusal). */
  state: [change: StateChange];
  /** A connect attempt failed (`retryable`: the client keeps trying; otherwise it stopped). */
  error: [error: MessengerError];
  /** A send was queued: show it at once as pending (match it later by clientMessageId). */
  pending: [pending: PendingMessage];
  /** The service stored a queued send (201, or 200 for a repeat). */
  sent: [pending: PendingMessage, message: SentMessage];
  /** The service refused a queued send for good (a 4xx such as 403 MSG_USER_BLOCKED). */
  sendFailed: [pending: PendingMessage, error: MessengerError];
  /** The cursor moved (after the event was handed over): store it to resume after a reload. */
  cursor: [cursor: string];
  /** The resume cursor was refused: reload the chat list (see ResyncNeeded). */
  resyncNeeded: [resync: ResyncNeeded];
} & {
  /** Each hub event by its own name too: `client.on('read_receipt_updated', (p) => p.LastReadSeq)`. */
  [K in HubEventName]: [payload: MessengerEventMap[K]];
};

export type ClientEventName = keyof ClientEventMap;
