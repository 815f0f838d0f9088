import { HttpClient, HttpError, HttpResponse, type HttpRequest } from '@microsoft/signalr';
import { retryAfterMsOf } from './backoff.ts';

/**
 * The SignalR client's HTTP (negotiate) over fetch, reporting a Retry-After the server answered
 * with (a replica past its connect rate answers 503 with one), so the reconnect waits at least that.
 */
export class RetryAfterHttpClient extends HttpClient {
  private readonly doFetch: typeof fetch;
  private readonly onRetryAfter: (ms: number) => void;

  constructor(doFetch: typeof fetch, onRetryAfter: (ms: number) => void) {
    super();
    // Called as a plain function: browsers refuse fetch called as a method of another object (Illegal invocation).
    this.doFetch = (input, init) => doFetch(input, init);
    this.onRetryAfter = onRetryAfter;
  }

  override async send(request: HttpRequest): Promise<HttpResponse> {
    const signals = [request.abortSignal, request.timeout ? AbortSignal.timeout(request.timeout) : undefined].filter((s): s is AbortSignal => s !== undefined);
    const res = await this.doFetch(request.url!, {
      method: request.method ?? 'GET',
      headers: request.headers,
      body: request.content,
      credentials: request.withCredentials ? 'include' : 'same-origin',
      ...(signals.length > 0 ? { signal: AbortSignal.any(signals) } : {}),
    });
    const retryAfter = retryAfterMsOf(res.headers.get('retry-after'));
    if (retryAfter > 0) this.onRetryAfter(retryAfter);
    if (!res.ok) throw new HttpError((await res.text().catch(() => '')) || res.statusText, res.status);
    const content = request.responseType === 'arraybuffer' ? await res.arrayBuffer() : await res.text();
    return new HttpResponse(res.status, res.statusText, content);
  }
}
