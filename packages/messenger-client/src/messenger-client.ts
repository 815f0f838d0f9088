import { HttpTransportType, HubConnectionBuilder, HubConnectionState, LogLevel, type HubConnection, type IRetryPolicy } from '@microsoft/signalr';
import { retryDelayMs, type BackoffOptions } from './backoff.ts';
import { RecentKeys } from './chat-sequencer.ts';
import { ChatTracker } from './chat-tracker.ts';
import type { MessengerEventMap, MessengerEventName } from './events.ts';
import { RetryAfterHttpClient } from './http.ts';
import { memoryStorage, outcomeOf, SendQueue, type MessageContent, type PendingMessage, type PendingStorage } from './send-queue.ts';
import { PRESENCE_BATCH, TypingGate, type ChatListPage, type UserPresence } from './presence.ts';
import { MESSENGER_EVENTS, newClientMessageId, str, toChatMessage, type ChatMessage, type Wire } from './wire.ts';

/**
 * A small messenger client over the official @microsoft/signalr client, for Node and browsers (only
 * `fetch` and the SignalR client are used). It connects with a token, reconnects with full-jitter
 * backoff that honours the server's Retry-After, delivers each chat's messages exactly once and in
 * Seq order, and after a reconnect resumes every kind of event from the last Cursor it got
 * (GET /api/messenger/events), falling back to the per-chat Seq refill from list-messages (the source
 * of truth) when the cursor is past retention. Sends go through an offline queue: shown at once as
 * pending, retried with the same clientMessageId until the server acknowledges them.
 */

export interface MessengerClientOptions {
  /** Service origin, e.g. https://api.example.org (the hub is at /hubs/messenger). */
  baseUrl: string;
  accessTokenFactory: () => string | Promise<string>;
  /** New messages, once each, in Seq order per chat. */
  onMessage?: (message: ChatMessage) => void;
  /** Edits and deletions (message_edited / message_deleted, or a tombstone), once per change. */
  onMessageChanged?: (message: Partial<ChatMessage> & { chatId: string; messageId: string; seq: number }) => void;
  /** Every other hub event (chat_updated, call_invited, …) with its payload as pushed, once each (live or resumed). */
  onEvent?: <K extends MessengerEventName>(event: K, payload: MessengerEventMap[K]) => void;
  /** Reconnect and retry delays: full jitter between minMs and a ceiling doubling from baseMs to capMs. */
  backoff?: BackoffOptions;
  /** Where sends wait until acknowledged. Default: in memory (lost with the page or process). */
  pendingStorage?: PendingStorage;
  /** A send is queued: show it at once as pending (match it later by clientMessageId). */
  onPending?: (pending: PendingMessage) => void;
  /** The server stored a queued send (answered 201, or 200 for a repeat): the message as stored. */
  onSent?: (pending: PendingMessage, message: Record<string, unknown>) => void;
  /** The server refused a queued send for good (a 4xx such as 403 MSG_USER_BLOCKED): drop or mark it. */
  onSendFailed?: (pending: PendingMessage, error: { status: number; code: string; message: string }) => void;
  /** list-messages page size for refills. Default 200. */
  pageSize?: number;
  /** Longest list-messages request; a failed refill is retried with the reconnect backoff. Default 15 s. */
  requestTimeoutMs?: number;
  fetch?: typeof fetch;
  logLevel?: LogLevel;
}

export class MessengerClient {
  readonly connection: HubConnection;
  private readonly opts: MessengerClientOptions;
  private readonly chats: ChatTracker;
  private readonly changes = new RecentKeys();
  private stopped = true;
  private restartTimer: ReturnType<typeof setTimeout> | undefined;
  /** A Retry-After the server answered with: the next retry waits at least this long. */
  private retryAfterMs = 0;
  /** The last event-stream Cursor received (frames reach a connection in the order they were sent). */
  private cursor: string | undefined;
  private readonly seenEvents = new RecentKeys();
  private readonly sends: SendQueue;
  private readonly typingGate = new TypingGate();

  constructor(opts: MessengerClientOptions) {
    this.opts = opts;
    const policy: IRetryPolicy = { nextRetryDelayInMilliseconds: (ctx) => this.delay(ctx.previousRetryCount) };
    const httpClient = new RetryAfterHttpClient(opts.fetch ?? fetch, (ms) => (this.retryAfterMs = Math.max(this.retryAfterMs, ms)));
    this.sends = new SendQueue({
      storage: opts.pendingStorage ?? memoryStorage(),
      post: async (p) => outcomeOf(await this.request('POST', `/api/messenger/chats/${p.chatId}/messages`, { ...p.content, clientMessageId: p.clientMessageId })),
      onSent: (p, m) => opts.onSent?.(p, m),
      onFailed: (p, e) => opts.onSendFailed?.(p, e),
    });
    this.chats = new ChatTracker({
      request: (method, path) => this.request(method, path),
      delay: (attempt) => this.delay(attempt),
      stopped: () => this.stopped,
      deliver: (m) => opts.onMessage?.(m),
      deleted: (m, key) => this.changed(m, key),
      pageSize: opts.pageSize ?? 200,
    });
    this.connection = new HubConnectionBuilder()
      .withUrl(`${opts.baseUrl.replace(/\/$/, '')}/hubs/messenger`, {
        accessTokenFactory: opts.accessTokenFactory,
        transport: HttpTransportType.WebSockets,
        httpClient,
      })
      .withAutomaticReconnect(policy)
      .configureLogging(opts.logLevel ?? LogLevel.None)
      .build();
    for (const event of ['message_received', 'message_edited', 'message_deleted', ...MESSENGER_EVENTS]) {
      this.connection.on(event, (p: Wire) => this.dispatch(event, p));
    }
    // After any gap in the connection: resume every kind of event from the last Cursor.
    this.connection.onreconnected(() => {
      this.typingGate.reset();
      return this.resume();
    });
    this.connection.onclose(() => this.scheduleRestart(0));
  }

  /** Connects (retrying with the backoff until it succeeds or stop() is called). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.connect(0);
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

  /** Marks a chat read up to `seq` (read receipts go to the other participants); answers the stored last read Seq. */
  async markRead(chatId: string, seq: number): Promise<number> {
    const res = await this.request('POST', `/api/messenger/chats/${chatId}/read`, { seq });
    if (!res.ok) throw new Error(`mark read ${res.status}`);
    return ((await res.json()) as { lastReadSeq: number }).lastReadSeq;
  }

  /**
   * Tells the chat's other members that the user is typing (a `typing` event on their side). Call it
   * as the user types: calls within a few seconds of the last one for the chat are skipped. Rejects
   * with the server's refusal (MSG_CHAT_NOT_FOUND for a chat the user is not a member of).
   */
  async typing(chatId: string): Promise<void> {
    if (this.connection.state !== HubConnectionState.Connected || !this.typingGate.due(chatId)) return;
    await this.connection.invoke('Typing', chatId);
  }

  /** Online state and last-seen time of users (in order); those the user may not see come back with online null. */
  async presence(userIds: readonly string[]): Promise<UserPresence[]> {
    const out: UserPresence[] = [];
    for (let i = 0; i < userIds.length; i += PRESENCE_BATCH) {
      const ids = userIds.slice(i, i + PRESENCE_BATCH).join(',');
      const res = await this.request('GET', `/api/messenger/presence?userIds=${encodeURIComponent(ids)}`);
      if (!res.ok) throw new Error(`presence ${res.status}`);
      out.push(...((await res.json()) as { users: UserPresence[] }).users);
    }
    return out;
  }

  /**
   * The chat list with unread counts: without a token every chat (most recently active first), with
   * one only the chats changed since and the ids of those left; keep `next` for the following call.
   */
  async chatList(after?: string, limit = 50): Promise<ChatListPage> {
    const query = `limit=${limit}${after === undefined ? '' : `&after=${encodeURIComponent(after)}`}`;
    const res = await this.request('GET', `/api/messenger/chats?${query}`);
    if (!res.ok) throw new Error(`chat list ${res.status}`);
    return (await res.json()) as ChatListPage;
  }

  /** Waits until no refill runs and the send queue is drained or waiting to retry (tests, graceful UIs). */
  async settled(): Promise<void> {
    await this.idle();
    await this.sends.idle();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.sends.stop();
    clearTimeout(this.restartTimer);
    await this.connection.stop();
    await this.chats.stop();
  }

  get state(): HubConnectionState {
    return this.connection.state;
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

  private delay(attempt: number): number {
    const retryAfter = this.retryAfterMs;
    this.retryAfterMs = 0;
    return retryDelayMs(attempt, this.opts.backoff, retryAfter);
  }

  private async connect(attempt: number): Promise<void> {
    if (this.stopped || this.connection.state !== HubConnectionState.Disconnected) return;
    try {
      await this.connection.start();
      await this.resume();
    } catch {
      this.scheduleRestart(attempt + 1);
    }
  }

  private async request(method: string, path: string, body?: unknown): Promise<Response> {
    return (this.opts.fetch ?? fetch)(`${this.opts.baseUrl.replace(/\/$/, '')}${path}`, {
      method,
      headers: { authorization: `Bearer ${await this.opts.accessTokenFactory()}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(this.opts.requestTimeoutMs ?? 15_000),
    });
  }

  /** A pushed or resumed frame: messages through the Seq sequencer, every other kind once per Cursor. */
  private dispatch(event: string, p: Wire): void {
    const cursor = str(p.Cursor);
    if (cursor !== null) this.cursor = cursor;
    if (event === 'message_received') return this.chats.receive(toChatMessage(p));
    if (event === 'message_edited') return this.changed(toChatMessage(p), `edit:${str(p.MessageId)}:${str(p.EditedAt)}`);
    if (event === 'message_deleted') {
      return this.changed({ chatId: String(p.ChatId), messageId: String(p.MessageId), seq: Number(p.Seq), deleted: true }, `delete:${str(p.MessageId)}`);
    }
    if (cursor !== null && !this.seenEvents.first(cursor)) return;
    this.opts.onEvent?.(event as MessengerEventName, p as never);
  }

  /**
   * After a (re)connect: every event pushed since the last Cursor, page by page, through the same
   * handlers as live frames; the first connect starts at the stream's head and refills the tracked
   * chats. A cursor past retention (410) or past the head (400 MSG_EVENTS_CURSOR_AHEAD) falls back
   * to the per-chat Seq refill from the head. Then queued sends go.
   */
  private async resume(): Promise<void> {
    try {
      if (this.cursor === undefined) {
        this.cursor = await this.streamHead();
        await this.chats.refillAll();
        return;
      }
      for (;;) {
        const res = await this.request('GET', `/api/messenger/events?after=${encodeURIComponent(this.cursor)}&limit=500`);
        if (await this.cursorLost(res)) {
          this.cursor = await this.streamHead();
          await this.chats.refillAll();
          return;
        }
        if (!res.ok) throw new Error(`events ${res.status}`);
        const page = (await res.json()) as { events: { cursor: string; name: string; payload: Wire }[]; next: string };
        for (const e of page.events) this.dispatch(e.name, e.payload);
        this.cursor = page.next;
        if (page.events.length === 0) return;
      }
    } catch {
      // The stream could not be read: the Seq refill still brings every message back.
      await this.chats.refillAll();
    } finally {
      this.sends.flush();
    }
  }

  /**
   * The stream cannot resume from this cursor: past retention (410), or past the stream's head (400
   * MSG_EVENTS_CURSOR_AHEAD: a cursor it never handed out, e.g. after the server's database was
   * restored). Either way the client starts again from the head; kept, the cursor would fail again.
   */
  private async cursorLost(res: Response): Promise<boolean> {
    if (res.status === 410) return true;
    if (res.status !== 400) return false;
    const body = (await res.json().catch(() => ({}))) as { code?: unknown };
    return body.code === 'MSG_EVENTS_CURSOR_AHEAD';
  }

  private async streamHead(): Promise<string | undefined> {
    const res = await this.request('GET', '/api/messenger/events');
    return res.ok ? ((await res.json()) as { next: string }).next : undefined;
  }

  /** onclose fires when automatic reconnect gave up (or never applied, e.g. a refused start). */
  private scheduleRestart(attempt: number): void {
    if (this.stopped) return;
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => void this.connect(attempt), this.delay(attempt));
  }

  private changed(m: Partial<ChatMessage> & { chatId: string; messageId: string; seq: number }, key: string): void {
    if (this.changes.first(key)) this.opts.onMessageChanged?.(m);
  }
}
