/** Value sets of chats and their participants (varchar columns, check constraints keep them honest). */

/** The hub group of a chat's Active participants. */
export const chatGroup = (chatId: string): string => `chat:${chatId}`;

export const CHAT_KINDS = ['Direct', 'Group'] as const;
export type ChatKind = (typeof CHAT_KINDS)[number];
export const PARTICIPANT_ROLES = ['Owner', 'Member'] as const;
export type ParticipantRole = (typeof PARTICIPANT_ROLES)[number];
export const PARTICIPANT_STATUSES = ['Active', 'Removed'] as const;
export type ParticipantStatus = (typeof PARTICIPANT_STATUSES)[number];
/** The chat's system feed (chat-event.md): announced to the chat as ChatUpdated. */
export const CHAT_EVENT_KINDS = ['Created', 'Renamed', 'ParticipantAdded', 'ParticipantRemoved'] as const;
export type ChatEventKind = (typeof CHAT_EVENT_KINDS)[number];
