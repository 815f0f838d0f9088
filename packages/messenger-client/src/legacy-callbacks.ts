import type { ChangedMessage, ClientEventMap, ClientEventName } from './client-events.ts';
import type { MessengerError } from './errors.ts';
import type { MessengerEventMap, MessengerEventName } from './events.ts';
import type { StateChange } from './hub-link.ts';
import type { PendingMessage } from './send-queue.ts';
import type { ChatMessage, SentMessage } from './wire.ts';

/**
 * The option callbacks of 0.2, kept so apps written for it still work: each is one listener of
 * `client.on()` added at construction. Deprecated: they go in 0.4.
 */
export interface LegacyCallbacks {
  /** @deprecated `client.on('message', fn)`. */
  onMessage?: (message: ChatMessage) => void;
  /** @deprecated `client.on('messageChanged', fn)`. */
  onMessageChanged?: (message: ChangedMessage) => void;
  /**
   * @deprecated `client.on('event', (e) => …)` (switch on `e.name` and `e.payload` is typed), or
   * `client.on('read_receipt_updated', (payload) => …)`: this signature cannot narrow the payload.
   */
  onEvent?: <K extends MessengerEventName>(event: K, payload: MessengerEventMap[K]) => void;
  /** @deprecated `client.on('state', fn)`. */
  onStateChanged?: (change: StateChange) => void;
  /** @deprecated `client.on('error', fn)`. */
  onError?: (error: MessengerError) => void;
  /** @deprecated `client.on('pending', fn)`. */
  onPending?: (pending: PendingMessage) => void;
  /** @deprecated `client.on('sent', fn)`. */
  onSent?: (pending: PendingMessage, message: SentMessage) => void;
  /** @deprecated `client.on('sendFailed', fn)`. */
  onSendFailed?: (pending: PendingMessage, error: MessengerError) => void;
  /** @deprecated `client.on('cursor', fn)`. */
  onCursor?: (cursor: string) => void;
}

type On = <K extends ClientEventName>(name: K, listener: (...args: ClientEventMap[K]) => void) => unknown;

export function legacyListeners(o: LegacyCallbacks, on: On): void {
  if (o.onMessage) on('message', o.onMessage);
  if (o.onMessageChanged) on('messageChanged', o.onMessageChanged);
  const onEvent = o.onEvent;
  if (onEvent) on('event', (e) => onEvent(e.name, e.payload));
  if (o.onStateChanged) on('state', o.onStateChanged);
  if (o.onError) on('error', o.onError);
  if (o.onPending) on('pending', o.onPending);
  if (o.onSent) on('sent', o.onSent);
  if (o.onSendFailed) on('sendFailed', o.onSendFailed);
  if (o.onCursor) on('cursor', o.onCursor);
}
