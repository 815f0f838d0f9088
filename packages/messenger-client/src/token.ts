import { MessengerError, TOKEN_REFRESH_FAILED, TOKEN_UNAVAILABLE, UnauthorizedError } from './errors.ts';

/** Why the client asks `getToken` for a token. */
export interface TokenContext {
  /** `initial`: no token yet; `expiring`: the current one expires within `refreshBeforeExpiryMs`; `rejected`: the server answered 401 to it. */
  reason: 'initial' | 'expiring' | 'rejected';
}

export interface TokenOptions {
  /** The token to start with (else `getToken` is asked at the first call). */
  token?: string;
  /**
   * Gets a new token: when there is none yet, shortly before the current one expires (its JWT
   * `exp`), and when the server refuses it with 401. Throw UnauthorizedError (or return '') when no
   * token can be had: the client then stops with a final TOKEN_UNAVAILABLE error. Any other failure
   * is retried with the reconnect backoff.
   */
  getToken?: (ctx: TokenContext) => string | Promise<string>;
  /**
   * The SignalR-style alternative: called for every request and connect, returning the token to use
   * now (the app keeps it fresh). After a 401 it is called once more; the same token again is final.
   */
  accessTokenFactory?: () => string | Promise<string>;
  /**
   * How long before a JWT's `exp` getToken is asked for the next one, and the live connection is
   * moved onto it (the hub closes a connection when its token expires). Default 30 s.
   */
  refreshBeforeExpiryMs?: number;
}

/** A JWT's payload claims, or undefined for a token that is not a readable JWT (an opaque token). */
function claimsOf(token: string): Record<string, unknown> | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const claims: unknown = JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(payload.length / 4) * 4, '=')));
    return typeof claims === 'object' && claims !== null ? (claims as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A JWT's `exp` in epoch ms, or undefined for a token that is not a readable JWT (opaque tokens: 401-driven refresh only). */
export function expiryOf(token: string): number | undefined {
  const exp = claimsOf(token)?.exp;
  return typeof exp === 'number' ? exp * 1000 : undefined;
}

/** A JWT's `sub`: the messenger's user id (README, "Get a user into the messenger"). */
export function subjectOf(token: string): string | undefined {
  const sub = claimsOf(token)?.sub;
  return typeof sub === 'string' ? sub.toLowerCase() : undefined;
}

/** Holds the token, refreshes it through the app's hook (one refresh at a time), and says when a refusal is final. */
export class TokenKeeper {
  private token: string | undefined;
  private refreshing: Promise<string> | undefined;
  /** The last token handed out: the one a 401 refused. */
  private issued: string | undefined;
  private readonly opts: TokenOptions;

  constructor(opts: TokenOptions) {
    if (!opts.getToken && !opts.accessTokenFactory && opts.token === undefined) throw new TypeError('MessengerClient needs token, getToken or accessTokenFactory');
    this.opts = opts;
    this.token = opts.token;
  }

  get refreshBeforeExpiryMs(): number {
    return this.opts.refreshBeforeExpiryMs ?? 30_000;
  }

  /** The app's new token (MessengerClient.setToken): used from the next request on. */
  set(token: string): void {
    if (this.opts.accessTokenFactory && !this.opts.getToken) throw new TypeError('setToken: this client asks accessTokenFactory for every token');
    if (!token) throw new TypeError('setToken: the token is empty');
    this.token = token;
  }

  /** The token to send now, refreshed first when it is missing or about to expire. */
  async current(now = Date.now()): Promise<string> {
    const { accessTokenFactory, getToken } = this.opts;
    if (accessTokenFactory && !getToken) return (this.issued = await accessTokenFactory());
    if (this.token === undefined) return (this.issued = await this.refresh('initial'));
    const exp = expiryOf(this.token);
    if (getToken && exp !== undefined && exp - now <= this.refreshBeforeExpiryMs) {
      try {
        return (this.issued = await this.refresh('expiring'));
      } catch (err) {
        // Not expired yet: the old token still works while getToken's own backend is away.
        if (exp > now && err instanceof MessengerError && err.code === TOKEN_REFRESH_FAILED) return (this.issued = this.token);
        throw err;
      }
    }
    return (this.issued = this.token);
  }

  /**
   * After the server refused the last token with `refusal` (a 401): a new token to try, or a final
   * error when none can be had (no hook, the hook refused, or it gave the refused token again).
   */
  async renew(refusal: MessengerError): Promise<string> {
    const refused = this.issued;
    const { accessTokenFactory, getToken } = this.opts;
    let next: string;
    if (getToken) {
      try {
        next = this.token !== refused && this.token ? this.token : await this.refresh('rejected');
      } catch (err) {
        // The hook cannot help: final, with the server's code (why the token was refused).
        if (err instanceof MessengerError && err.code === TOKEN_UNAVAILABLE) throw new MessengerError(refusal.code, `${refusal.message}; ${err.message}`, 401);
        throw err;
      }
    }
    else if (accessTokenFactory) next = await accessTokenFactory();
    else throw refusal;
    if (!next || next === refused) throw new MessengerError(refusal.code, `${refusal.message} (and no new token could be had)`, 401);
    return next;
  }

  private refresh(reason: TokenContext['reason']): Promise<string> {
    const getToken = this.opts.getToken;
    if (!getToken) return Promise.reject(new MessengerError(TOKEN_UNAVAILABLE, 'no token and no getToken to ask for one', 401));
    this.refreshing ??= (async () => {
      try {
        const token = await getToken({ reason });
        if (!token) throw new UnauthorizedError('getToken returned no token');
        this.token = token;
        return token;
      } catch (err) {
        if (err instanceof UnauthorizedError) throw new MessengerError(TOKEN_UNAVAILABLE, err.message || 'getToken: no token can be had', 401);
        throw new MessengerError(TOKEN_REFRESH_FAILED, `getToken failed: ${String((err as Error)?.message ?? err)}`, 0);
      } finally {
        this.refreshing = undefined;
      }
    })();
    return this.refreshing;
  }
}
