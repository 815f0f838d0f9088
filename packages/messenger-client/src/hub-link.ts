import { HttpTransportType, HubConnectionBuilder, HubConnectionState, LogLevel, type HubConnection } from '@microsoft/signalr';
import { retryDelayMs, type BackoffOptions } from './backoff.ts';
import { CONNECTION_LOST, errorOfThrown, MessengerError, NETWORK_ERROR } from './errors.ts';
import { ReportingHttpClient, runtimeWebSocket } from './http.ts';
import { expiryOf, type TokenKeeper } from './token.ts';

/**
 * The connection's state machine, as an app shows it:
 *   disconnected → connecting (start) → connected → reconnecting (connection lost) → connected …
 * and back to disconnected on stop() or on a refusal that retrying cannot fix (a 401 the token hook
 * cannot answer with a new token, 403 such as MSG_USER_INACTIVE). Every other failure (no answer,
 * 5xx, 503 HUB_BUSY) is retried with full-jitter backoff, never sooner than a Retry-After.
 *
 * The hub closes a connection when the token it was opened with expires and offers no way to hand
 * it a new one, so shortly before that (refreshBeforeExpiryMs) the link opens a second connection
 * with a fresh token, resumes through it, and only then closes the first: the app sees no state
 * change, and a frame that reached both connections is dropped by the client's dedupe.
 */
export type ConnectionState = 'disconnected' | 'connecting' | 'connected' | 'reconnecting';

export interface StateChange {
  state: ConnectionState;
  previous: ConnectionState;
  /** Why the connection was lost or refused (absent on connect and on stop()). */
  error?: MessengerError;
}

export interface HubLinkOptions {
  baseUrl: string;
  fetch: typeof fetch;
  tokens: TokenKeeper;
  backoff: BackoffOptions | undefined;
  logLevel: LogLevel | undefined;
  /** Runs after every (re)connect and token rollover, before start() resolves the first time: resume what was missed. */
  connected: () => Promise<void>;
  stateChanged: (change: StateChange) => void;
  error: (error: MessengerError) => void;
}

/** setTimeout's longest delay; a token living longer is rolled over after it, then checked again. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class HubLink {
  state: ConnectionState = 'disconnected';
  private conn: HubConnection;
  private stopped = true;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private rollTimer: ReturnType<typeof setTimeout> | undefined;
  /** A second connection is being opened to replace the current one (its close is then not a loss). */
  private rolling = false;
  /** The token each connection was opened with: the hub closes it at that token's `exp`. */
  private readonly openedWith = new WeakMap<HubConnection, string>();
  private readonly handlers = new Map<string, (payload: Record<string, unknown>) => void>();
  /** Why the current attempt failed, as the server (or the token hook) said it. */
  private refusal: MessengerError | undefined;
  /** A token was renewed after a 401 and not yet accepted: another 401 is final. */
  private renewed = false;
  private waiters: { resolve: () => void; reject: (e: MessengerError) => void }[] = [];
  private readonly opts: HubLinkOptions;

  constructor(opts: HubLinkOptions) {
    this.opts = opts;
    this.conn = this.build((e) => (this.refusal = e));
  }

  /** The current SignalR connection (a token rollover replaces it). */
  get connection(): HubConnection {
    return this.conn;
  }

  /** Handles a hub event on this and every later connection. */
  on(event: string, handler: (payload: Record<string, unknown>) => void): void {
    this.handlers.set(event, handler);
    this.conn.on(event, handler);
  }

  /** Resolves once connected (and resumed); rejects with the first attempt's failure (see MessengerClient.start). */
  start(): Promise<void> {
    if (!this.stopped && this.state === 'connected') return Promise.resolve();
    const settled = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (this.stopped) {
      this.stopped = false;
      this.attempt = 0;
      this.setState('connecting');
      void this.tryConnect();
    }
    return settled;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.rollTimer);
    await this.conn.stop();
    if (this.state !== 'disconnected') this.setState('disconnected');
    this.settle(new MessengerError('CLIENT_STOPPED', 'stop() was called', 0));
  }

  get active(): boolean {
    return !this.stopped;
  }

  /** Moves the live connection onto the token the keeper holds now (after setToken), without a state change. */
  rollOverNow(): void {
    if (this.state === 'connected') void this.rollover(true);
  }

  private build(onRefused: (error: MessengerError) => void): HubConnection {
    const WebSocket = runtimeWebSocket();
    const conn: HubConnection = new HubConnectionBuilder()
      .withUrl(`${this.opts.baseUrl.replace(/\/$/, '')}/hubs/messenger`, {
        accessTokenFactory: async () => {
          try {
            const token = await this.opts.tokens.current();
            this.openedWith.set(conn, token);
            return token;
          } catch (err) {
            onRefused(errorOfThrown(err));
            throw err;
          }
        },
        transport: HttpTransportType.WebSockets,
        httpClient: new ReportingHttpClient(this.opts.fetch, onRefused),
        ...(WebSocket === undefined ? {} : { WebSocket }),
      })
      .configureLogging(this.opts.logLevel ?? LogLevel.None)
      .build();
    for (const [event, handler] of this.handlers) conn.on(event, handler);
    // One reconnect loop, ours (not the SignalR client's automatic reconnect), so every attempt is
    // judged the same way: refresh the token, wait, or stop. A replaced connection's close is none of its business.
    conn.onclose((err) => {
      if (this.stopped || conn !== this.conn || this.rolling) return;
      clearTimeout(this.rollTimer);
      this.setState('reconnecting', new MessengerError(CONNECTION_LOST, err?.message ?? 'the connection closed', 0));
      this.schedule(undefined);
    });
    return conn;
  }

  private async tryConnect(): Promise<void> {
    if (this.stopped || this.conn.state !== HubConnectionState.Disconnected) return;
    this.refusal = undefined;
    try {
      await this.conn.start();
    } catch (err) {
      return this.failed(this.refusal ?? new MessengerError(NETWORK_ERROR, String((err as Error)?.message ?? err), 0));
    }
    if (this.stopped) return void (await this.conn.stop());
    this.attempt = 0;
    this.renewed = false;
    this.setState('connected');
    this.scheduleRollover();
    await this.opts.connected();
    this.settle();
  }

  /** Arms the rollover for refreshBeforeExpiryMs before the current connection's token expires (none for an opaque token). */
  private scheduleRollover(delayMs?: number): void {
    clearTimeout(this.rollTimer);
    const token = this.openedWith.get(this.conn);
    const exp = token === undefined ? undefined : expiryOf(token);
    if (exp === undefined || this.stopped) return;
    const due = delayMs ?? exp - this.opts.tokens.refreshBeforeExpiryMs - Date.now();
    this.rollTimer = setTimeout(() => void this.rollover(), Math.min(MAX_TIMER_MS, Math.max(0, due)));
  }

  /**
   * Opens the next connection with a fresh token, resumes through it, then closes the old one. No
   * fresh token (getToken failing, or none to ask): tried again with the backoff while the old token
   * lives; past it the hub closes the connection and the reconnect loop takes over.
   */
  private async rollover(force = false): Promise<void> {
    if (this.stopped || this.state !== 'connected' || this.rolling) return;
    const old = this.conn;
    const oldToken = this.openedWith.get(old);
    const oldExp = oldToken === undefined ? undefined : expiryOf(oldToken);
    // A timer cut short by setTimeout's limit (a token living for weeks): not due yet, wait again.
    if (!force && oldExp !== undefined && oldExp - this.opts.tokens.refreshBeforeExpiryMs > Date.now()) return this.scheduleRollover();
    this.rolling = true;
    let next: HubConnection | undefined;
    try {
      const fresh = await this.opts.tokens.current();
      if (fresh === oldToken) throw new MessengerError('TOKEN_NOT_RENEWED', 'no new token yet', 0);
      next = this.build(() => undefined); // a failed rollover only waits: why does not matter
      await next.start();
    } catch {
      this.rolling = false;
      void next?.stop();
      if (old.state !== HubConnectionState.Connected) return this.lostDuringRollover(old);
      if (oldExp !== undefined && oldExp > Date.now()) this.scheduleRollover(retryDelayMs(this.attempt++, this.opts.backoff));
      return;
    }
    this.rolling = false;
    if (this.stopped) return void (await next.stop());
    this.conn = next;
    this.attempt = 0;
    this.scheduleRollover();
    await this.opts.connected();
    await old.stop();
  }

  /** The old connection closed while its replacement failed to open: the ordinary reconnect loop. */
  private lostDuringRollover(old: HubConnection): void {
    if (this.stopped || old !== this.conn) return;
    this.setState('reconnecting', new MessengerError(CONNECTION_LOST, 'the connection closed while its token was being renewed', 0));
    this.schedule(undefined);
  }

  private async failed(error: MessengerError): Promise<void> {
    if (this.stopped) return;
    if (error.status === 401 && !this.renewed) {
      try {
        await this.opts.tokens.renew(error);
        this.renewed = true;
        return this.schedule(undefined);
      } catch (err) {
        error = errorOfThrown(err);
      }
    }
    if (!error.retryable) {
      // Final: a token nobody can refresh, a deactivated user. Retrying would only repeat it.
      this.stopped = true;
      this.setState('disconnected', error);
      this.opts.error(error);
      this.settle(error);
      return;
    }
    this.opts.error(error);
    this.settle(error); // start() reports the failure; the loop goes on trying
    this.schedule(error.retryAfterMs);
  }

  private schedule(retryAfterMs: number | undefined): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tryConnect(), retryDelayMs(this.attempt++, this.opts.backoff, retryAfterMs));
  }

  private settle(error?: MessengerError): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) (error ? w.reject(error) : w.resolve());
  }

  private setState(state: ConnectionState, error?: MessengerError): void {
    const previous = this.state;
    if (previous === state) return;
    this.state = state;
    this.opts.stateChanged({ state, previous, ...(error ? { error } : {}) });
  }
}
