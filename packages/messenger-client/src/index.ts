/**
 * The messenger's client library (browser and Node): depends on @microsoft/signalr and `fetch`
 * only, never on server code, so it can be bundled for web apps as is.
 */
export { MessengerClient, type MessengerClientOptions } from './messenger-client.ts';
export { MESSENGER_EVENTS, toChatMessage, type ChatMessage } from './wire.ts';
export { ChatSequencer, RecentKeys, type Offered, type SequencedMessage } from './chat-sequencer.ts';
export { retryDelayMs, retryAfterMsOf, type BackoffOptions } from './backoff.ts';
export { memoryStorage, type MessageContent, type PendingMessage, type PendingStorage } from './send-queue.ts';
export type * from './events.ts';
export { PRESENCE_BATCH, TYPING_INTERVAL_MS, type ChatListPage, type ListedChat, type UserPresence } from './presence.ts';
