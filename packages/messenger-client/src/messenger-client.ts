import { LogLevel, type HubConnection } from '@microsoft/signalr';
import { retryDelayMs, type BackoffOptions } from './backoff.ts';
import { MessengerApi, type Chat, type HistoryPage, type HistoryQuery, type MessageEdit, type NewChat } from './api.ts';
import { RecentKeys } from './chat-sequencer.ts';
import { ChatTracker } from './chat-tracker.ts';
import { errorOfResponse, errorOfThrown, type MessengerError } from './errors.ts';
import type { MessengerEventMap, MessengerEventName } from './events.ts';
import { HubLink, type ConnectionState, type StateChange } from './hub-link.ts';
import { TypingGate, type ChatListPage, type UserPresence } from './presence.ts';
import { Rest } from './rest.ts';
import { memoryStorage, outcomeOf, SendQueue, type MessageContent, type PendingMessage, type PendingStorage } from './send-queue.ts';
import { TokenKeeper, type TokenOptions } from './token.ts';
import { MESSENGER_EVENTS, newClientMessageId, str, toChatMessage, type ChatMessage, type SentMessage, type Wire } from './wire.ts';

/**
 * The messenger client for browsers and Node 20+: one SignalR connection with an honest state
 * machine (hub-link.ts), each chat's messages exactly once and in Seq order (refilled from
 * list-messages, the source of truth), every other event resumed from the last Cursor after a
 * reconnect — or after a page reload, from a cursor the app stored (`resumeFrom`) — and sends through
 * an offline queue retried with the same clientMessageId until the server acknowledges them.
 */

export interface MessengerClientOptions extends TokenOptions {
  /** Service origin, e.g. https://api.example.org (the hub is at /hubs/messenger). */
  baseUrl: string;
  /** A cursor from a previous client (`client.cursor`, e.g. kept in localStorage): start() resumes every event after it. */
  resumeFrom?: string;
  /** The cursor moved (after the event was handed to the app): store it to resume after a reload. */
  onCursor?: (cursor: string) => void;
  /** New messages, once each, in Seq order per chat. */
  onMessage?: (message: ChatMessage) => void;
  /** Edits and deletions (message_edited / message_deleted, or a tombstone), once per change. */
  onMessageChanged?: (message: Partial<ChatMessage> & { chatId: string; messageId: string; seq: number }) => void;
  /** Every other hub event (chat_updated, call_invited, …) with its payload as pushed, once each (live or resumed). */
  onEvent?: <K extends MessengerEventName>(event: K, payload: MessengerEventMap[K]) => void;
  /** The connection's state changed (with the error that caused a loss or a final refusal). */
  onStateChanged?: (change: StateChange) => void;
  /** A connect attempt failed (`retryable`: the client keeps trying; otherwise it stopped). */
  onError?: (error: MessengerError) => void;
  /** Reconnect and retry delays: full jitter between minMs and a ceiling doubling from baseMs to capMs. */
  backoff?: BackoffOptions;
  /** Where sends wait until acknowledged. Default: in memory (lost with the page or process). */
  pendingStorage?: PendingStorage;
  /** A send is queued: show it at once as pending (match it later by clientMessageId). */
  onPending?: (pending: PendingMessage) => void;
  /** The server stored a queued send (201, or 200 for a repeat): the message, shaped as onMessage's. */
  onSent?: (pending: PendingMessage, message: SentMessage) => void;
  /** The server refused a queued send for good (a 4xx such as 403 MSG_USER_BLOCKED): drop or mark it. */
  onSendFailed?: (pending: PendingMessage, error: MessengerError) => void;
  /** list-messages page size for refills. Default 200. */
  pageSize?: number;
  /** Longest REST request; a failed refill is retried with the reconnect backoff. Default 15 s. */
  requestTimeoutMs?: number;
  fetch?: typeof fetch;
  logLevel?: LogLevel;
}

type Listeners = { state: (change: StateChange) => void; error: (error: MessengerError) => void };

export class MessengerClient {
  private readonly opts: MessengerClientOptions;
  private readonly link: HubLink;
  private readonly rest: Rest;
  private readonly api: MessengerApi;
  private readonly chats: ChatTracker;
  private readonly sends: SendQueue;
  private readonly changes = new RecentKeys();
  private readonly seenEvents = new RecentKeys();
  private readonly typingGate = new TypingGate();
  private readonly listeners: { [K in keyof Listeners]: Set<Listeners[K]> } = { state: new Set(), error: new Set() };
  /** The last event-stream Cursor handed on (frames reach a connection in the order they were sent). */
  private last: string | undefined;
  /** The resume after the latest (re)connect: settled() waits for it. */
  private resuming: Promise<void> = Promise.resolve();

  constructor(opts: MessengerClientOptions) {
    this.opts = opts;
    this.last = opts.resumeFrom;
    const tokens = new TokenKeeper(opts);
    const doFetch = opts.fetch ?? ((input, init) => fetch(input, init));
    this.rest = new Rest(opts.baseUrl, doFetch, tokens, opts.requestTimeoutMs ?? 15_000);
    this.api = new MessengerApi(this.rest);
    this.sends = new SendQueue({
      storage: opts.pendingStorage ?? memoryStorage(),
      post: async (p) => {
        try {
          return await outcomeOf(await this.rest.request('POST', `/api/messenger/chats/${p.chatId}/messages`, { ...p.content, clientMessageId: p.clientMessageId }));
        } catch (err) {
          const error = errorOfThrown(err); // no answer, or a token nobody can refresh
          return error.retryable ? { kind: 'retry', retryAfterMs: error.retryAfterMs ?? 0 } : { kind: 'refused', error };
        }
      },
      onSent: (p, m) => opts.onSent?.(p, { ...toChatMessage(m), id: String(m.id) }),
      onFailed: (p, e) => opts.onSendFailed?.(p, e),
    });
    this.chats = new ChatTracker({
      request: (method, path) => this.rest.request(method, path),
      delay: (attempt) => retryDelayMs(attempt, opts.backoff),
      stopped: () => !this.link.active,
      deliver: (m) => opts.onMessage?.(m),
      deleted: (m, key) => this.changed(m, key),
      pageSize: opts.pageSize ?? 200,
    });
    this.link = new HubLink({
      baseUrl: opts.baseUrl,
      fetch: doFetch,
      tokens,
      backoff: opts.backoff,
      logLevel: opts.logLevel,
      connected: () => {
        this.typingGate.reset(); // a new connection: the server's typing throttle starts over
        this.resuming = this.resume();
        return this.resuming;
      },
      stateChanged: (change) => {
        opts.onStateChanged?.(change);
        for (const l of this.listeners.state) l(change);
      },
      error: (error) => {
        opts.onError?.(error);
        for (const l of this.listeners.error) l(error);
      },
    });
    for (const event of ['message_received', 'message_edited', 'message_deleted', ...MESSENGER_EVENTS]) {
      this.link.connection.on(event, (p: Wire) => this.dispatch(event, p));
    }
  }

  /**
   * Connects and resumes what was missed. Resolves once connected; rejects with a MessengerError
   * carrying the server's code when the first attempt fails. A refusal retrying cannot fix (a token
   * getToken cannot replace, 403 MSG_USER_INACTIVE) leaves the client `disconnected`; after any other
   * failure (unreachable, 503 HUB_BUSY) it keeps trying in the background (`connecting`) until
   * connected or stop().
   */
  start(): Promise<void> {
    return this.link.start();
  }

  async stop(): Promise<void> {
    await this.sends.stop();
    await this.link.stop();
    await this.chats.stop();
  }

  get state(): ConnectionState {
    return this.link.state;
  }

  /** The position in the event stream after the last event handed to the app: give it to a new client as `resumeFrom`. */
  get cursor(): string | undefined {
    return this.last;
  }

  /** The underlying SignalR connection (advanced use: calling hub methods this client does not wrap). */
  get connection(): HubConnection {
    return this.link.connection;
  }

  /** Listens to state changes or connect errors; returns the function that stops listening. */
  on<K extends keyof Listeners>(event: K, listener: Listeners[K]): () => void {
    const set = this.listeners[event] as Set<Listeners[K]>;
    set.add(listener);
    return () => set.delete(listener);
  }

  /**
   * Sends a message: picks its clientMessageId, hands it to onPending at once, and keeps it in the
   * offline queue until the server acknowledges it (onSent) or refuses it for good (onSendFailed).
   */
  async send(chatId: string, content: MessageContent): Promise<PendingMessage> {
    const pending: PendingMessage = { clientMessageId: newClientMessageId(), chatId, content, createdAt: new Date().toISOString() };
    this.opts.onPending?.(pending);
    await this.sends.add(pending);
    return pending;
  }

  /** Sends still waiting for the server, in order (e.g. to show them again after a restart). */
  pendingSends(): Promise<PendingMessage[]> {
    return this.sends.list();
  }

  /**
   * Tells the chat's other members that the user is typing. Call it as the user types: calls within
   * a few seconds of the last one for the chat are skipped. Rejects with the server's refusal.
   */
  async typing(chatId: string): Promise<void> {
    if (this.link.state !== 'connected' || !this.typingGate.due(chatId)) return;
    await this.link.connection.invoke('Typing', chatId);
  }

  createChat(chat: NewChat): Promise<Chat> {
    return this.api.createChat(chat);
  }
  acceptChat(chatId: string): Promise<Chat> {
    return this.api.acceptChat(chatId);
  }
  getChat(chatId: string): Promise<Chat> {
    return this.api.getChat(chatId);
  }
  /** A page of history in ascending Seq order: `{ beforeSeq }` pages back from the oldest shown, `{ afterSeq }` forward. */
  history(chatId: string, query?: HistoryQuery): Promise<HistoryPage> {
    return this.api.history(chatId, query);
  }
  editMessage(chatId: string, messageId: string, edit: MessageEdit): Promise<ChatMessage> {
    return this.api.editMessage(chatId, messageId, edit);
  }
  deleteMessage(chatId: string, messageId: string): Promise<void> {
    return this.api.deleteMessage(chatId, messageId);
  }
  markRead(chatId: string, seq: number): Promise<number> {
    return this.api.markRead(chatId, seq);
  }
  presence(userIds: readonly string[]): Promise<UserPresence[]> {
    return this.api.presence(userIds);
  }
  chatList(after?: string, limit?: number): Promise<ChatListPage> {
    return this.api.chatList(after, limit);
  }

  /** Waits until the resume after a (re)connect is done, no refill runs and the send queue is drained or waiting to retry (tests, graceful UIs). */
  async settled(): Promise<void> {
    await this.resuming;
    await this.chats.idle();
    await this.sends.idle();
  }

  /** Follows a chat from `afterSeq` (what the app already shows); older pushes are ignored, a gap is refilled. */
  trackChat(chatId: string, afterSeq = 0): void {
    this.chats.track(chatId, afterSeq);
  }

  /** The last Seq delivered for a chat (undefined if not tracked). */
  lastSeq(chatId: string): number | undefined {
    return this.chats.lastSeq(chatId);
  }

  /** Fetches what is missing after the last delivered Seq (also called by the client itself). */
  refill(chatId: string): Promise<void> {
    return this.chats.refill(chatId);
  }

  /** Waits until no refill is running (tests, graceful UIs). */
  idle(): Promise<void> {
    return this.chats.idle();
  }

  /** A pushed or resumed frame: messages through the Seq sequencer, every other kind once per Cursor. */
  private dispatch(event: string, p: Wire): void {
    const cursor = str(p.Cursor);
    if (event === 'message_received') this.chats.receive(toChatMessage(p));
    else if (event === 'message_edited') this.changed(toChatMessage(p), `edit:${str(p.MessageId)}:${str(p.EditedAt)}`);
    else if (event === 'message_deleted') {
      this.changed({ chatId: String(p.ChatId), messageId: String(p.MessageId), seq: Number(p.Seq), deleted: true }, `delete:${str(p.MessageId)}`);
    } else if (cursor === null || this.seenEvents.first(cursor)) this.opts.onEvent?.(event as MessengerEventName, p as never);
    if (cursor !== null) this.moveCursor(cursor);
  }

  private moveCursor(cursor: string | undefined): void {
    if (cursor === undefined || cursor === this.last) return;
    this.last = cursor;
    this.opts.onCursor?.(cursor);
  }

  /**
   * After a (re)connect: every event pushed since the last Cursor, page by page, through the same
   * handlers as live frames; without a cursor the client starts at the stream's head and refills
   * the tracked chats. A cursor past retention (410) or not this service's (400) falls back to the
   * per-chat Seq refill (400 covers MSG_EVENTS_CURSOR_AHEAD: a cursor past the head). Then queued sends go.
   */
  private async resume(): Promise<void> {
    try {
      for (;;) {
        if (this.last === undefined) return await this.restartFromHead();
        const res = await this.rest.request('GET', `/api/events?after=${encodeURIComponent(this.last)}&limit=500`);
        if (res.status === 410 || res.status === 400) return await this.restartFromHead();
        if (!res.ok) throw await errorOfResponse(res);
        const page = (await res.json()) as { events: { cursor: string; name: string; payload: Wire }[]; next: string };
        for (const e of page.events) this.dispatch(e.name, e.payload);
        this.moveCursor(page.next);
        if (page.events.length === 0) return;
      }
    } catch {
      // The stream could not be read: the Seq refill still brings every message back.
      await this.chats.refillAll();
    } finally {
      this.sends.flush();
    }
  }

  private async restartFromHead(): Promise<void> {
    const res = await this.rest.request('GET', '/api/events');
    if (res.ok) this.moveCursor(((await res.json()) as { next: string }).next);
    await this.chats.refillAll();
  }

  private changed(m: Partial<ChatMessage> & { chatId: string; messageId: string; seq: number }, key: string): void {
    if (this.changes.first(key)) this.opts.onMessageChanged?.(m);
  }
}
