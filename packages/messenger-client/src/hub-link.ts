import { HttpTransportType, HubConnectionBuilder, HubConnectionState, LogLevel, type HubConnection } from '@microsoft/signalr';
import { retryDelayMs, type BackoffOptions } from './backoff.ts';
import { CONNECTION_LOST, errorOfThrown, MessengerError, NETWORK_ERROR } from './errors.ts';
import { ReportingHttpClient, runtimeWebSocket } from './http.ts';
import type { TokenKeeper } from './token.ts';

/**
 * The connection's state machine, as an app shows it:
 *   disconnected → connecting (start) → connected → reconnecting (connection lost) → connected …
 * and back to disconnected on stop() or on a refusal that retrying cannot fix (a 401 the token hook
 * cannot answer with a new token, 403 such as MSG_USER_INACTIVE). Every other failure (no answer,
 * 5xx, 503 HUB_BUSY) is retried with full-jitter backoff, never sooner than a Retry-After.
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
  /** Runs after every (re)connect, before start() resolves the first time: resume what was missed. */
  connected: () => Promise<void>;
  stateChanged: (change: StateChange) => void;
  error: (error: MessengerError) => void;
}

export class HubLink {
  readonly connection: HubConnection;
  state: ConnectionState = 'disconnected';
  private stopped = true;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Why the current attempt failed, as the server (or the token hook) said it. */
  private refusal: MessengerError | undefined;
  /** A token was renewed after a 401 and not yet accepted: another 401 is final. */
  private renewed = false;
  private waiters: { resolve: () => void; reject: (e: MessengerError) => void }[] = [];
  private readonly opts: HubLinkOptions;

  constructor(opts: HubLinkOptions) {
    this.opts = opts;
    const httpClient = new ReportingHttpClient(opts.fetch, (e) => (this.refusal = e));
    const WebSocket = runtimeWebSocket();
    this.connection = new HubConnectionBuilder()
      .withUrl(`${opts.baseUrl.replace(/\/$/, '')}/hubs/messenger`, {
        accessTokenFactory: async () => {
          try {
            return await opts.tokens.current();
          } catch (err) {
            this.refusal = errorOfThrown(err);
            throw err;
          }
        },
        transport: HttpTransportType.WebSockets,
        httpClient,
        ...(WebSocket === undefined ? {} : { WebSocket }),
      })
      .configureLogging(opts.logLevel ?? LogLevel.None)
      .build();
    // One reconnect loop, ours (not the SignalR client's automatic reconnect), so every attempt is
    // judged the same way: refresh the token, wait, or stop.
    this.connection.onclose((err) => {
      if (this.stopped) return;
      this.setState('reconnecting', new MessengerError(CONNECTION_LOST, err?.message ?? 'the connection closed', 0));
      this.schedule(undefined);
    });
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
    await this.connection.stop();
    if (this.state !== 'disconnected') this.setState('disconnected');
    this.settle(new MessengerError('CLIENT_STOPPED', 'stop() was called', 0));
  }

  get active(): boolean {
    return !this.stopped;
  }

  private async tryConnect(): Promise<void> {
    if (this.stopped || this.connection.state !== HubConnectionState.Disconnected) return;
    this.refusal = undefined;
    try {
      await this.connection.start();
    } catch (err) {
      return this.failed(this.refusal ?? new MessengerError(NETWORK_ERROR, String((err as Error)?.message ?? err), 0));
    }
    if (this.stopped) return void (await this.connection.stop());
    this.attempt = 0;
    this.renewed = false;
    this.setState('connected');
    await this.opts.connected();
    this.settle();
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
