import { HttpClient, HttpError, HttpResponse, type HttpRequest } from '@microsoft/signalr';
import { errorOfResponse, type MessengerError } from './errors.ts';

/**
 * The SignalR client's HTTP (negotiate) over fetch. The SignalR client turns a refused negotiate
 * into a bare "Failed to complete negotiation" error, so every refusal is reported here first with
 * the server's code, status and Retry-After: the connection loop decides from it whether to refresh
 * the token, wait, or stop.
 */
export class ReportingHttpClient extends HttpClient {
  private readonly doFetch: typeof fetch;
  private readonly onRefused: (error: MessengerError) => void;

  constructor(doFetch: typeof fetch, onRefused: (error: MessengerError) => void) {
    super();
    // Called as a plain function: browsers refuse fetch called as a method of another object (Illegal invocation).
    this.doFetch = (input, init) => doFetch(input, init);
    this.onRefused = onRefused;
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
    if (!res.ok) {
      const error = await errorOfResponse(res);
      this.onRefused(error);
      throw new HttpError(`${error.code}: ${error.message}`, res.status);
    }
    const content = request.responseType === 'arraybuffer' ? await res.arrayBuffer() : await res.text();
    return new HttpResponse(res.status, res.statusText, content);
  }
}

/**
 * The WebSocket the SignalR client should use: the runtime's own where it has one (browsers, Node
 * 22+), else undefined and the SignalR client loads its `ws` dependency itself (Node 20). Under Node
 * the SignalR client passes the Authorization header as a third constructor argument, which the
 * ws package reads but Node's built-in WebSocket does not: it takes headers in its second argument.
 */
export function runtimeWebSocket(): unknown {
  const Native = (globalThis as { WebSocket?: new (url: string | URL, protocols?: unknown) => object }).WebSocket;
  if (Native === undefined) return undefined;
  const g = globalThis as { process?: { release?: { name?: string } } };
  if (g.process?.release?.name !== 'node') return Native;
  return class NodeWebSocket extends Native {
    constructor(url: string | URL, protocols?: string | string[], init?: { headers?: Record<string, string> }) {
      super(url, init?.headers ? { protocols: protocols ?? [], headers: init.headers } : protocols);
    }
  };
}
