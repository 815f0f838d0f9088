import { retryDelayMs } from './backoff.ts';
import { errorOfResponse, type MessengerError } from './errors.ts';

/**
 * Messages the app sent and the server has not acknowledged yet: kept in order in a storage the app
 * may replace (in memory by default; IndexedDB or a file so they survive a restart), sent one after
 * the other, and retried until the server answers. Each keeps the clientMessageId it was given once,
 * so a retry of a send whose answer was lost is answered with the stored message, never a second one.
 */

/** What a message says: the field of its kind only (the service refuses the others). */
export interface MessageContent {
  kind: 'Text' | 'File' | 'Card';
  body?: string;
  /** A File message names the file uploadFile confirmed, by its id only: the service fills in its name, type and size. */
  fileId?: string;
  cardText?: string;
  /** Reply to this message of the same chat (404 MSG_REPLY_PARENT_NOT_FOUND when it is not one you can read). */
  replyToMessageId?: string;
  /** Mention these members of a group chat (at most 50, each once; 422 MSG_MENTION_NOT_MEMBER, MSG_MENTIONS_GROUP_ONLY). */
  mentionedUserIds?: string[];
}

export interface PendingMessage {
  clientMessageId: string;
  chatId: string;
  content: MessageContent;
  /** When the app sent it (ISO-8601). */
  createdAt: string;
}

/** Where pending messages live between sends (and restarts). */
export interface PendingStorage {
  load(): Promise<PendingMessage[]>;
  save(pending: readonly PendingMessage[]): Promise<void>;
}

export function memoryStorage(): PendingStorage {
  let items: PendingMessage[] = [];
  return {
    load: async () => [...items],
    save: async (pending) => {
      items = [...pending];
    },
  };
}

/** What one POST came to: acknowledged (with the stored message), refused for good, or to be retried. */
export type SendOutcome =
  | { kind: 'sent'; message: Record<string, unknown> }
  | { kind: 'refused'; error: MessengerError }
  | { kind: 'retry'; retryAfterMs: number };

export interface SendQueueOptions {
  storage: PendingStorage;
  post(p: PendingMessage): Promise<SendOutcome>;
  onSent?: (p: PendingMessage, message: Record<string, unknown>) => void;
  onFailed?: (p: PendingMessage, error: MessengerError) => void;
}

/** A refusal that will not change on a retry; anything else (network, 408, 429, 5xx) is retried. */
export async function outcomeOf(res: Response): Promise<SendOutcome> {
  if (res.ok) return { kind: 'sent', message: (await res.json()) as Record<string, unknown> };
  const error = await errorOfResponse(res);
  return error.retryable ? { kind: 'retry', retryAfterMs: error.retryAfterMs ?? 0 } : { kind: 'refused', error };
}

export class SendQueue {
  private pending: PendingMessage[] | undefined;
  private running: Promise<void> | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private attempt = 0;
  private stopped = false;

  private readonly opts: SendQueueOptions;

  constructor(opts: SendQueueOptions) {
    this.opts = opts;
  }

  /** What is still unacknowledged, in send order (for the app to show as pending after a restart). */
  async list(): Promise<PendingMessage[]> {
    return [...(await this.loaded())];
  }

  async add(p: PendingMessage): Promise<void> {
    const pending = await this.loaded();
    pending.push(p);
    await this.opts.storage.save(pending);
    this.flush();
  }

  /** Sends what is pending now (after a reconnect, or when the app knows the network is back). */
  flush(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.running ??= this.drain().finally(() => (this.running = undefined));
  }

  /** Sends again after stop() (the client started again); what was added meanwhile goes with the next flush(). */
  restart(): void {
    this.stopped = false;
  }

  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    return this.running ?? Promise.resolve();
  }

  /** Resolves once nothing is pending, or a retry is scheduled (tests, graceful UIs). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async loaded(): Promise<PendingMessage[]> {
    this.pending ??= await this.opts.storage.load();
    return this.pending;
  }

  private async drain(): Promise<void> {
    const pending = await this.loaded();
    while (pending.length > 0 && !this.stopped) {
      const p = pending[0]!;
      let outcome: SendOutcome;
      try {
        outcome = await this.opts.post(p);
      } catch {
        outcome = { kind: 'retry', retryAfterMs: 0 }; // the network: same id again later
      }
      if (outcome.kind === 'retry') {
        this.timer = setTimeout(() => this.flush(), retryDelayMs(this.attempt++, {}, outcome.retryAfterMs));
        return;
      }
      this.attempt = 0;
      pending.shift();
      await this.opts.storage.save(pending);
      if (outcome.kind === 'sent') this.opts.onSent?.(p, outcome.message);
      else this.opts.onFailed?.(p, outcome.error);
    }
  }
}
