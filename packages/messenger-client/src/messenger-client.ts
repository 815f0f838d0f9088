import { HttpTransportType, HubConnectionBuilder, HubConnectionState, LogLevel, type HubConnection, type IRetryPolicy } from '@microsoft/signalr';
import { ChatSequencer, RecentKeys } from './chat-sequencer.ts';

/**
 * A small messenger client over the official @microsoft/signalr client, for Node and browsers (only
 * `fetch` and the SignalR client are used). It connects with a token, reconnects with backoff,
 * delivers each chat's messages exactly once and in Seq order, and refills from list-messages (the
 * source of truth) after a reconnect, a server close (e.g. slow consumer) or a Seq gap.
 */

export interface ChatMessage {
  chatId: string;
  messageId: string;
  seq: number;
  senderUserId: string;
  kind: string;
  body?: string | null;
  fileMeta?: unknown;
  cardText?: string | null;
  sentAt: string;
  editedAt: string | null;
  deleted: boolean;
}

export interface MessengerClientOptions {
  /** Service origin, e.g. https://api.example.org (the hub is at /hubs/messenger). */
  baseUrl: string;
  accessTokenFactory: () => string | Promise<string>;
  /** New messages, once each, in Seq order per chat. */
  onMessage?: (message: ChatMessage) => void;
  /** Edits and deletions (message_edited / message_deleted, or a tombstone), once per change. */
  onMessageChanged?: (message: Partial<ChatMessage> & { chatId: string; messageId: string; seq: number }) => void;
  /** Every other hub event (chat_updated, call_invited, …) with its payload as pushed. */
  onEvent?: (event: string, payload: unknown) => void;
  /** Reconnect delays (ms) by attempt; the last repeats forever. Default 0, 1 s, 2 s, 5 s, 10 s, 30 s. */
  reconnectDelaysMs?: number[];
  /** list-messages page size for refills. Default 200. */
  pageSize?: number;
  /** Longest list-messages request; a failed refill is retried with the reconnect backoff. Default 15 s. */
  requestTimeoutMs?: number;
  fetch?: typeof fetch;
  logLevel?: LogLevel;
}

/** Hub events the client forwards to onEvent (the message ones it handles itself). */
export const MESSENGER_EVENTS = [
  'read_receipt_updated', 'chat_updated', 'contact_request_received', 'contact_request_accepted', 'contact_removed', 'blacklist_changed',
  'call_invited', 'call_answered', 'call_declined', 'call_missed', 'call_cancelled', 'call_ended', 'conference_invited', 'conference_started',
  'conference_ended', 'conference_participant_joined', 'conference_participant_left', 'recording_started', 'recording_stopped',
  'recording_available', 'recording_failed', 'screen_share_started', 'screen_share_stopped',
];

type Wire = Record<string, unknown>;
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** A pushed (PascalCase) or listed (camelCase) message in one shape. */
export function toChatMessage(w: Wire): ChatMessage {
  const pick = (pascal: string) => (pascal in w ? w[pascal] : w[pascal[0]!.toLowerCase() + pascal.slice(1)]);
  return {
    chatId: String(pick('ChatId')),
    messageId: String(pick('MessageId') ?? w.id),
    seq: Number(pick('Seq')),
    senderUserId: String(pick('SenderUserId')),
    kind: String(pick('Kind')),
    body: str(pick('Body')),
    fileMeta: pick('FileMeta') ?? null,
    cardText: str(pick('CardText')),
    sentAt: String(pick('SentAt')),
    editedAt: str(pick('EditedAt')),
    deleted: pick('Deleted') === true,
  };
}

export class MessengerClient {
  readonly connection: HubConnection;
  private readonly opts: MessengerClientOptions;
  private readonly chats = new Map<string, ChatSequencer<ChatMessage>>();
  private readonly changes = new RecentKeys();
  private readonly fills = new Map<string, { running: Promise<void>; again: boolean }>();
  private readonly retries = new Map<string, { timer: ReturnType<typeof setTimeout>; attempt: number }>();
  private stopped = true;
  private restartTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly delays: number[];

  constructor(opts: MessengerClientOptions) {
    this.opts = opts;
    this.delays = opts.reconnectDelaysMs ?? [0, 1000, 2000, 5000, 10_000, 30_000];
    const policy: IRetryPolicy = { nextRetryDelayInMilliseconds: (ctx) => this.delay(ctx.previousRetryCount) };
    this.connection = new HubConnectionBuilder()
      .withUrl(`${opts.baseUrl.replace(/\/$/, '')}/hubs/messenger`, { accessTokenFactory: opts.accessTokenFactory, transport: HttpTransportType.WebSockets })
      .withAutomaticReconnect(policy)
      .configureLogging(opts.logLevel ?? LogLevel.None)
      .build();
    this.connection.on('message_received', (p: Wire) => this.receive(toChatMessage(p)));
    this.connection.on('message_edited', (p: Wire) => this.changed(toChatMessage(p), `edit:${str(p.MessageId)}:${str(p.EditedAt)}`));
    this.connection.on('message_deleted', (p: Wire) =>
      this.changed({ chatId: String(p.ChatId), messageId: String(p.MessageId), seq: Number(p.Seq), deleted: true }, `delete:${str(p.MessageId)}`),
    );
    for (const event of MESSENGER_EVENTS) this.connection.on(event, (p: unknown) => opts.onEvent?.(event, p));
    // After any gap in the connection, the REST history is the truth: refill every known chat.
    this.connection.onreconnected(() => this.refillAll());
    this.connection.onclose(() => this.scheduleRestart(0));
  }

  /** Connects (retrying with the backoff until it succeeds or stop() is called). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.connect(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    for (const r of this.retries.values()) clearTimeout(r.timer);
    this.retries.clear();
    await this.connection.stop();
    await Promise.allSettled([...this.fills.values()].map((f) => f.running));
  }

  get state(): HubConnectionState {
    return this.connection.state;
  }

  /** Follows a chat from `afterSeq` (what the app already shows); older pushes are ignored, a gap is refilled. */
  trackChat(chatId: string, afterSeq = 0): void {
    if (!this.chats.has(chatId)) this.chats.set(chatId, new ChatSequencer(afterSeq));
  }

  /** The last Seq delivered for a chat (undefined if not tracked). */
  lastSeq(chatId: string): number | undefined {
    return this.chats.get(chatId)?.delivered;
  }

  /** Fetches what is missing after the last delivered Seq (also called by the client itself). */
  refill(chatId: string): Promise<void> {
    const current = this.fills.get(chatId);
    if (current) {
      current.again = true;
      return current.running;
    }
    const entry = { running: Promise.resolve(), again: false };
    entry.running = (async () => {
      try {
        do {
          entry.again = false;
          await this.fillOnce(chatId);
        } while (entry.again && !this.stopped);
        this.retries.delete(chatId);
      } catch {
        this.retryRefill(chatId);
      } finally {
        this.fills.delete(chatId);
      }
    })();
    this.fills.set(chatId, entry);
    return entry.running;
  }

  /** Waits until no refill is running (tests, graceful UIs). */
  async idle(): Promise<void> {
    while (this.fills.size > 0) await Promise.allSettled([...this.fills.values()].map((f) => f.running));
  }

  /** A refill that failed (network, timeout, 5xx) is tried again with the backoff until it succeeds. */
  private retryRefill(chatId: string): void {
    if (this.stopped) return;
    const previous = this.retries.get(chatId);
    const attempt = (previous?.attempt ?? 0) + 1;
    clearTimeout(previous?.timer);
    const timer = setTimeout(() => void this.refill(chatId), this.delay(attempt));
    this.retries.set(chatId, { timer, attempt });
  }

  private delay(attempt: number): number {
    const base = this.delays[Math.min(attempt, this.delays.length - 1)] ?? 0;
    return Math.round(base * (1 + 0.2 * Math.random()));
  }

  private async connect(attempt: number): Promise<void> {
    if (this.stopped || this.connection.state !== HubConnectionState.Disconnected) return;
    try {
      await this.connection.start();
      await this.refillAll();
    } catch {
      this.scheduleRestart(attempt + 1);
    }
  }

  /** onclose fires when automatic reconnect gave up (or never applied, e.g. a refused start). */
  private scheduleRestart(attempt: number): void {
    if (this.stopped) return;
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => void this.connect(attempt), this.delay(attempt));
  }

  private sequencer(chatId: string, seq: number): ChatSequencer<ChatMessage> {
    let s = this.chats.get(chatId);
    if (!s) {
      // A chat first seen through a push starts at that message; older history is the app's to load.
      s = new ChatSequencer(seq - 1);
      this.chats.set(chatId, s);
    }
    return s;
  }

  private receive(m: ChatMessage): void {
    const { deliver, gap } = this.sequencer(m.chatId, m.seq).offer(m);
    for (const d of deliver) this.opts.onMessage?.(d);
    if (gap) void this.refill(m.chatId).catch(() => undefined);
  }

  private changed(m: Partial<ChatMessage> & { chatId: string; messageId: string; seq: number }, key: string): void {
    if (this.changes.first(key)) this.opts.onMessageChanged?.(m);
  }

  private async refillAll(): Promise<void> {
    await Promise.allSettled([...this.chats.keys()].map((chatId) => this.refill(chatId)));
  }

  private async fillOnce(chatId: string): Promise<void> {
    const doFetch = this.opts.fetch ?? fetch;
    const pageSize = this.opts.pageSize ?? 200;
    for (;;) {
      const s = this.chats.get(chatId);
      if (!s || this.stopped) return;
      const url = `${this.opts.baseUrl.replace(/\/$/, '')}/api/messenger/chats/${chatId}/messages?afterSeq=${s.delivered}&limit=${pageSize}`;
      const res = await doFetch(url, {
        headers: { authorization: `Bearer ${await this.opts.accessTokenFactory()}` },
        signal: AbortSignal.timeout(this.opts.requestTimeoutMs ?? 15_000),
      });
      // Not a participant any more: nothing to refill, and nothing to retry.
      if (res.status === 404) return;
      if (!res.ok) throw new Error(`list-messages ${res.status}`);
      const { items } = (await res.json()) as { items: Wire[] };
      for (const item of items) {
        const m = toChatMessage(item);
        if (m.deleted) this.changed(m, `delete:${m.messageId}`);
        this.receive(m);
      }
      if (items.length < pageSize) return;
    }
  }
}
