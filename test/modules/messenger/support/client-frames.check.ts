/**
 * Type-level: the client library's payload types (packages/messenger-client/src/events.ts) against
 * the server's frame schemas (the TypeBox schemas the frames are built and documented from). Checked
 * by `tsc` (npm test's set-up, and messenger-client.frames.test.ts on this file alone): a frame the
 * server gains, loses or changes without the client's types following fails to compile, naming it.
 * Also the REST answers of files and search (at the end).
 */
import type { Static } from '@sinclair/typebox';
import type { MessengerEventMap, MediaJoin } from '../../../../packages/messenger-client/src/events.ts';
import type { MESSENGER_FRAME_SCHEMAS, PresenceChangedFrame, TypingFrame } from '../../../../src/modules/messenger/realtime-dispatch/frames.ts';
import type { MediaJoinModel } from '../../../../src/modules/messenger/calls/media-join.ts';
import type { FileDownload, FileMeta, FileUploadTicket, FileView, SearchPage } from '../../../../packages/messenger-client/src/index.ts';
import type { DownloadTicket, FileView as FileViewSchema, UploadTicket } from '../../../../src/modules/messenger/files/routes.ts';
import type { FileMetaSchema, MessageSearchPage } from '../../../../src/modules/messenger/messages/schemas.ts';
import type { NotificationStatusChangedFrame } from '../../../../src/modules/notifications/status-frames.ts';
import type { NotificationCreatedFrame } from '../../../../src/modules/notifications/providers/in-app.ts';

/** MessageReceived → message_received: the push part's eventNameOf, as a type. */
type Snake<S extends string> = S extends `${infer H}${infer T}` ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${Snake<T>}` : '';
type EventOf<K extends string> = Snake<K> extends `_${infer E}` ? E : never;
type Schemas = typeof MESSENGER_FRAME_SCHEMAS;

/** Every frame the hub sends, by event name, as the server types it. */
type ServerFrames = { [K in keyof Schemas as EventOf<K & string>]: Static<Schemas[K]> } & {
  presence_changed: PresenceChangedFrame;
  typing: TypingFrame;
  notification_status_changed: NotificationStatusChangedFrame;
  notification_created: NotificationCreatedFrame;
};
type Client = MessengerEventMap;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Both = keyof ServerFrames & keyof Client;
/** Join is an open record in the frame schema; its shape is the calls part's MediaJoinModel, compared on its own below. */
type Fields<T> = Omit<T, 'Join'>;

/** Events one side has and the other does not. */
type OnlyOneSide = Exclude<keyof ServerFrames, keyof Client> | Exclude<keyof Client, keyof ServerFrames>;
/** Events whose payloads name different fields. */
type OtherFields = { [K in Both]: Same<keyof ServerFrames[K], keyof Client[K]> extends true ? never : K }[Both];
/** Events where a frame the server may send is not a value of the client's type (a field's type changed). */
type NotAccepted = { [K in Both]: Fields<ServerFrames[K]> extends Fields<Client[K]> ? never : K }[Both];

/** Compiles only for `never`; otherwise tsc names what T is (the events that differ). */
function none<T extends never>(): void {}

none<OnlyOneSide>();
none<OtherFields>();
none<NotAccepted>();
none<Same<MediaJoin, MediaJoinModel> extends true ? never : 'MediaJoin differs from MediaJoinModel'>();

/**
 * The REST answers of files and search the client hands over as they come: the same fields of the
 * same types both ways. A search hit's message is converted (toChatMessage), so only the rest of it.
 */
type ServerHit = Static<typeof MessageSearchPage>['items'][number];
none<Same<FileView, Static<typeof FileViewSchema>> extends true ? never : 'FileView differs from the server\'s FileView'>();
none<Same<FileUploadTicket, Static<typeof UploadTicket>> extends true ? never : 'FileUploadTicket differs from the server\'s FileUploadTicket'>();
none<Same<FileDownload, Static<typeof DownloadTicket>> extends true ? never : 'FileDownload differs from the server\'s FileDownload'>();
none<Same<Omit<SearchPage['items'][number], 'message'>, Omit<ServerHit, 'message'>> extends true ? never : 'SearchHit differs from the server\'s MessageSearchHit'>();
none<Same<FileMeta, Static<typeof FileMetaSchema>> extends true ? never : 'FileMeta differs from the server\'s FileMeta'>();
none<Same<SearchPage['nextCursor'], Static<typeof MessageSearchPage>['nextCursor']> extends true ? never : 'nextCursor differs'>();
