import { errorOfResponse, errorOfThrown } from './errors.ts';
import type { TokenKeeper } from './token.ts';

/**
 * The service's REST API with the client's token: a 401 asks the token hook for a new token and
 * sends the request once more; any other failure is a MessengerError (the server's code, message,
 * status and Retry-After, or NETWORK_ERROR when no answer came).
 */
export class Rest {
  private readonly base: string;
  private readonly doFetch: typeof fetch;
  private readonly tokens: TokenKeeper;
  private readonly timeoutMs: number;

  constructor(baseUrl: string, doFetch: typeof fetch, tokens: TokenKeeper, timeoutMs: number) {
    this.base = baseUrl.replace(/\/$/, '');
    this.doFetch = (input, init) => doFetch(input, init); // a plain call: browsers refuse fetch as another object's method
    this.tokens = tokens;
    this.timeoutMs = timeoutMs;
  }

  /** The answer, whatever its status (callers that read 404/410 themselves); throws only when there is none. */
  async request(method: string, path: string, body?: unknown): Promise<Response> {
    const send = async (token: string) => {
      try {
        return await this.doFetch(`${this.base}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (err) {
        throw errorOfThrown(err);
      }
    };
    const res = await send(await this.tokens.current());
    if (res.status !== 401) return res;
    // Refused token: one more try with a fresh one (the hook's), else the refusal stands.
    return send(await this.tokens.renew(await errorOfResponse(res)));
  }

  /**
   * A request to another host (the object store's presigned URL): without the service's token,
   * which is not the store's to see, and without the REST timeout (a large upload takes longer):
   * `init.signal` is the caller's to give.
   */
  async external(url: string, init: RequestInit): Promise<Response> {
    try {
      return await this.doFetch(url, init);
    } catch (err) {
      throw errorOfThrown(err);
    }
  }

  /** The answer's JSON body when 2xx (undefined for 204), else its MessengerError. */
  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.request(method, path, body);
    if (!res.ok) throw await errorOfResponse(res);
    return (res.status === 204 ? undefined : await res.json()) as T;
  }
}
