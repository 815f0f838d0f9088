/**
 * The messenger's client library (browser and Node): depends on @microsoft/signalr and `fetch`
 * only, never on server code, so it can be bundled for web apps as is.
 */
export { MessengerClient, MESSENGER_EVENTS, toChatMessage, type ChatMessage, type MessengerClientOptions } from './messenger-client.ts';
export { ChatSequencer, RecentKeys, type Offered, type SequencedMessage } from './chat-sequencer.ts';
