/** Value sets of chats and their participants (varchar columns, check constraints keep them honest). */

/** The hub group of a chat's Active participants. */
export const chatGroup = (chatId: string): string => `chat:${chatId}`;

const CHAT_GROUP = /^chat:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** The chat id of a chat:{ChatId} group; undefined for any other group. */
export const chatIdOfGroup = (group: string): string | undefined => CHAT_GROUP.exec(group)?.[1];

export const CHAT_KINDS = ['Direct', 'Group'] as const;
export type ChatKind = (typeof CHAT_KINDS)[number];
export const PARTICIPANT_ROLES = ['Owner', 'Member'] as const;
export type ParticipantRole = (typeof PARTICIPANT_ROLES)[number];
export const PARTICIPANT_STATUSES = ['Active', 'Removed'] as const;
export type ParticipantStatus = (typeof PARTICIPANT_STATUSES)[number];
/** A participant's notifications of the chat: every message, only those that mention them, or none (muted). */
export const NOTIFICATION_LEVELS = ['all', 'mentions', 'off'] as const;
export type NotificationLevel = (typeof NOTIFICATION_LEVELS)[number];
/** The chat's system feed (chat-event.md): announced to the chat as ChatUpdated. */
export const CHAT_EVENT_KINDS = ['Created', 'Renamed', 'ParticipantAdded', 'ParticipantRemoved', 'RequestAccepted'] as const;
export type ChatEventKind = (typeof CHAT_EVENT_KINDS)[number];
