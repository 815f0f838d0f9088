import type { Logger } from '../observability/logger.ts';
import { HubRefusal } from './access.ts';
import type { HubConnection } from './connection.ts';
import type { HubMetrics } from './metrics.ts';

/**
 * Methods clients call on the hub (`connection.invoke('Typing', chatId)`). A method resolves to
 * answer the call with an empty completion, or throws a HubRefusal whose message becomes the
 * completion's error (the official clients reject the invoke() with it). Any other failure is logged
 * and answered with a generic error, as ASP.NET Core does, so no server detail reaches the client.
 */
export interface HubCaller {
  userId: string;
  connectionId: string;
}
export type HubMethod = (caller: HubCaller, args: readonly unknown[]) => Promise<void>;

/** Longest method name echoed back in an "unknown method" error. */
const MAX_ECHOED_TARGET = 100;

export const streamRefusal = (target: string): string =>
  `The client attempted to invoke the non-streaming '${target}' method with a streaming invocation.`;

export function invokeHubMethod(
  methods: ReadonlyMap<string, HubMethod>,
  conn: HubConnection,
  call: { target: string; invocationId?: string; arguments: unknown[]; stream?: true },
  log: Logger,
  metrics: HubMetrics,
): void {
  const answer = (frame: () => Buffer | string) => {
    if (call.invocationId !== undefined && conn.state === 'open') conn.send(frame(), 'completion');
  };
  const method = methods.get(call.target);
  if (!method) {
    const target = call.target.slice(0, MAX_ECHOED_TARGET);
    return answer(() => conn.format.completionError(call.invocationId!, `Unknown hub method '${target}'`));
  }
  // No method streams: a StreamInvocation of one is refused unrun, with ASP.NET Core's text.
  if (call.stream) {
    metrics.invocationsRefused.inc({ reason: 'stream' });
    return answer(() => conn.format.completionError(call.invocationId!, streamRefusal(call.target)));
  }
  method({ userId: conn.userId, connectionId: conn.id }, call.arguments).then(
    () => answer(() => conn.format.completion(call.invocationId!)),
    (err: unknown) => {
      if (err instanceof HubRefusal) return answer(() => conn.format.completionError(call.invocationId!, err.message));
      log.error({ err, connectionId: conn.id, method: call.target }, 'hub method failed');
      answer(() => conn.format.completionError(call.invocationId!, `An unexpected error occurred invoking '${call.target}' on the server.`));
    },
  );
}
