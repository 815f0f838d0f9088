/**
 * The messenger's client library (browser and Node 20+): depends on @microsoft/signalr and `fetch`
 * only, never on server code, so it can be bundled for web apps as is.
 */
export { MessengerClient, type MessengerClientOptions } from './messenger-client.ts';
export type { ConnectionState, StateChange } from './hub-link.ts';
export { MessengerError, UnauthorizedError, CONNECTION_LOST, FILE_UPLOAD_REFUSED, HUB_METHOD_FAILED, NETWORK_ERROR, TOKEN_REFRESH_FAILED, TOKEN_UNAVAILABLE } from './errors.ts';
export type { ChangedMessage, ClientEventMap, ClientEventName, HubEvent, HubEventName, ResyncNeeded } from './client-events.ts';
export type { LegacyCallbacks } from './legacy-callbacks.ts';
export type { BlockedUser, Contact, PushPlatform } from './people.ts';
export type { TokenContext, TokenOptions } from './token.ts';
export type { Chat, ChatParticipant, Declined, HighlightPiece, HistoryPage, HistoryQuery, MessageEdit, NewChat, NotificationLevel, SearchHit, SearchPage, SearchQuery } from './api.ts';
export type { FileDownload, FileUploadTicket, FileView, NewFile } from './files.ts';
export { MESSENGER_EVENTS, toChatMessage, type ChatMessage, type FileMeta, type Reaction, type ReplyPreview, type SentMessage } from './wire.ts';
export { ChatSequencer, RecentKeys, type Offered, type SequencedMessage } from './chat-sequencer.ts';
export { retryDelayMs, retryAfterMsOf, type BackoffOptions } from './backoff.ts';
export { memoryStorage, type MessageContent, type PendingMessage, type PendingStorage } from './send-queue.ts';
export type * from './events.ts';
export { PRESENCE_BATCH, TYPING_INTERVAL_MS, type ChatListPage, type LastMessagePreview, type ListedChat, type UserPresence } from './presence.ts';
