import { LogLevel, type HubConnection } from '@microsoft/signalr';
import { retryDelayMs, type BackoffOptions } from './backoff.ts';
import { MessengerApi } from './api.ts';
import { RecentKeys } from './chat-sequencer.ts';
import { ChatTracker } from './chat-tracker.ts';
import type { ChangedMessage, ClientEventMap, ClientEventName, HubEventName } from './client-events.ts';
import { Emitter } from './emitter.ts';
import { errorOfHubCall, errorOfThrown, MessengerError } from './errors.ts';
import type { MessengerEventMap, MessengerEventName } from './events.ts';
import { HubLink, type ConnectionState, type StateChange } from './hub-link.ts';
import { legacyListeners, type LegacyCallbacks } from './legacy-callbacks.ts';
import { TypingGate } from './presence.ts';
import { Rest } from './rest.ts';
import { readEventsAfter } from './resume.ts';
import { memoryStorage, outcomeOf, SendQueue, type MessageContent, type PendingMessage, type PendingStorage } from './send-queue.ts';
import { subjectOf, TokenKeeper, type TokenOptions } from './token.ts';
import { MESSENGER_EVENTS, newClientMessageId, str, toChatMessage, type Wire } from './wire.ts';

/**
 * The messenger client for browsers and Node 20+: one SignalR connection with an honest state
 * machine (hub-link.ts), each chat's messages exactly once and in Seq order (refilled from
 * list-messages, the source of truth), every other event resumed from the last Cursor after a
 * reconnect — or after a page reload, from a cursor the app stored (`resumeFrom`) — and sends through
 * an offline queue retried with the same clientMessageId until the server acknowledges them. What
 * happens is reported through one typed emitter, `client.on(name, listener)` (client-events.ts).
 */

export interface MessengerClientOptions extends TokenOptions, LegacyCallbacks {
  /** Service origin, e.g. https://api.example.org (the hub is at /hubs/messenger). */
  baseUrl: string;
  /** A cursor from a previous client (`client.cursor`, e.g. kept in localStorage): start() resumes every event after it. */
  resumeFrom?: string;
  /** Reconnect and retry delays: full jitter between minMs and a ceiling doubling from baseMs to capMs. */
  backoff?: BackoffOptions;
  /** Where sends wait until acknowledged. Default: in memory (lost with the page or process). */
  pendingStorage?: PendingStorage;
  /** list-messages page size for refills. Default 200. */
  pageSize?: number;
  /** Longest REST request; a failed refill is retried with the reconnect backoff. Default 15 s. */
  requestTimeoutMs?: number;
  fetch?: typeof fetch;
  logLevel?: LogLevel;
}

export class MessengerClient extends MessengerApi {
  private readonly emitter = new Emitter<ClientEventMap>();
  private readonly tokens: TokenKeeper;
  private readonly link: HubLink;
  private readonly chats: ChatTracker;
  private readonly sends: SendQueue;
  private readonly changes = new RecentKeys();
  private readonly seenEvents = new RecentKeys();
  private readonly typingGate = new TypingGate();
  /** The last event-stream Cursor handed on (frames reach a connection in the order they were sent). */
  private last: string | undefined;
  /** The resume after the latest (re)connect: settled() waits for it. */
  private resuming: Promise<void> = Promise.resolve();

  constructor(opts: MessengerClientOptions) {
    const tokens = new TokenKeeper(opts);
    const doFetch = opts.fetch ?? ((input, init) => fetch(input, init));
    const rest = new Rest(opts.baseUrl, doFetch, tokens, opts.requestTimeoutMs ?? 15_000);
    super(rest, async () => {
      const id = subjectOf(await tokens.current());
      if (id === undefined) throw new MessengerError('TOKEN_NOT_JWT', 'the token is not a JWT with a sub: the user id is unknown', 0);
      return id;
    });
    this.tokens = tokens;
    this.last = opts.resumeFrom;
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
      // A send is acknowledged in the shape its push has (message_received restates no reactions: a new message has none).
      onSent: (p, m) => {
        const { reactions: _none, ...sent } = toChatMessage(m);
        this.emitter.emit('sent', p, { ...sent, id: String(m.id) });
      },
      onFailed: (p, e) => this.emitter.emit('sendFailed', p, e),
    });
    this.chats = new ChatTracker({
      request: (method, path) => this.rest.request(method, path),
      delay: (attempt) => retryDelayMs(attempt, opts.backoff),
      stopped: () => !this.link.active,
      deliver: (m) => this.emitter.emit('message', m),
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
      stateChanged: (change) => this.emitter.emit('state', change),
      error: (error) => this.emitter.emit('error', error),
    });
    for (const event of ['message_received', 'message_edited', 'message_deleted', ...MESSENGER_EVENTS]) {
      this.link.on(event, (p: Wire) => this.dispatch(event, p));
    }
    legacyListeners(opts, (name, listener) => this.emitter.on(name, listener));
  }

  /**
   * Connects and resumes what was missed. Resolves once connected; rejects with a MessengerError
   * carrying the server's code when the first attempt fails. A refusal retrying cannot fix (a token
   * getToken cannot replace, 403 MSG_USER_INACTIVE) leaves the client `disconnected`; after any other
   * failure (unreachable, 503 HUB_BUSY) it keeps trying in the background (`connecting`) until
   * connected or stop(). After stop(), start() connects again and sends what was queued meanwhile.
   */
  start(): Promise<void> {
    this.sends.restart();
    return this.link.start();
  }

  async stop(): Promise<void> {
    await this.sends.stop();
    await this.link.stop();
    await this.chats.stop();
  }

  /**
   * The app's new token (signed in again, refreshed by its own schedule): REST uses it from the next
   * request on, and the live connection is moved onto it without a state change. With
   * `accessTokenFactory` the factory stays the source of tokens (this throws a TypeError).
   */
  setToken(token: string): void {
    this.tokens.set(token);
    this.link.rollOverNow();
  }

  get state(): ConnectionState {
    return this.link.state;
  }

  /** The position in the event stream after the last event handed to the app: give it to a new client as `resumeFrom`. */
  get cursor(): string | undefined {
    return this.last;
  }

  /** The underlying SignalR connection (advanced use: calling hub methods this client does not wrap); a token rollover replaces it. */
  get connection(): HubConnection {
    return this.link.connection;
  }

  /** Listens to one kind of what happens (ClientEventMap); returns the function that stops listening. */
  on<K extends ClientEventName>(name: K, listener: (...args: ClientEventMap[K]) => void): () => void {
    return this.emitter.on(name, listener);
  }

  /**
   * Sends a message: picks its clientMessageId, reports it as `pending` at once, and keeps it in the
   * offline queue until the server acknowledges it (`sent`) or refuses it for good (`sendFailed`).
   */
  async send(chatId: string, content: MessageContent): Promise<PendingMessage> {
    const pending: PendingMessage = { clientMessageId: newClientMessageId(), chatId, content, createdAt: new Date().toISOString() };
    this.emitter.emit('pending', pending);
    await this.sends.add(pending);
    return pending;
  }

  /** Sends still waiting for the server, in order (e.g. to show them again after a restart). */
  pendingSends(): Promise<PendingMessage[]> {
    return this.sends.list();
  }

  /**
   * Tells the chat's other members that the user is typing. Call it as the user types: calls within
   * a few seconds of the last one for the chat, and calls while not connected, are skipped. Rejects
   * with a MessengerError: the server's refusal (404 MSG_CHAT_NOT_FOUND, 400 VALIDATION_FAILED) or
   * CONNECTION_LOST when the connection went away under the call.
   */
  async typing(chatId: string): Promise<void> {
    if (this.link.state !== 'connected' || !this.typingGate.due(chatId)) return;
    try {
      await this.link.connection.invoke('Typing', chatId);
    } catch (err) {
      throw errorOfHubCall(err);
    }
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
    } else if (cursor === null || this.seenEvents.first(cursor)) this.handOver(event as HubEventName, p as unknown as MessengerEventMap[HubEventName]);
    if (cursor !== null) this.moveCursor(cursor);
  }

  private handOver<K extends HubEventName>(name: K, payload: MessengerEventMap[K]): void {
    this.emitter.emit('event', { name, payload } as ClientEventMap['event'][0]);
    (this.emitter.emit as (name: MessengerEventName, payload: unknown) => void).call(this.emitter, name, payload);
  }

  private moveCursor(cursor: string | undefined): void {
    if (cursor === undefined || cursor === this.last) return;
    this.last = cursor;
    this.emitter.emit('cursor', cursor);
  }

  /**
   * After a (re)connect: every event pushed since the last Cursor through the same handlers as live
   * frames (resume.ts); without a cursor the client starts at the stream's head and refills the
   * tracked chats. A cursor the service refuses (past retention, another deployment's) is reported
   * as `resyncNeeded` and the client starts over the same way. Then queued sends go.
   */
  private async resume(): Promise<void> {
    try {
      const refused = await readEventsAfter(this.rest, () => this.last, (name, payload) => this.dispatch(name, payload), (next) => this.moveCursor(next));
      if (refused) this.emitter.emit('resyncNeeded', refused);
      if (this.last === undefined || refused) await this.restartFromHead();
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

  private changed(m: ChangedMessage, key: string): void {
    if (this.changes.first(key)) this.emitter.emit('messageChanged', m);
  }
}
