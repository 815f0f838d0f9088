import { ChatSequencer } from './chat-sequencer.ts';
import { toChatMessage, type ChatMessage, type Wire } from './wire.ts';

export interface ChatTrackerDeps {
  /** An authenticated request to the service (path from the origin). */
  request: (method: string, path: string) => Promise<Response>;
  /** The backoff delay before retry number `attempt`. */
  delay: (attempt: number) => number;
  stopped: () => boolean;
  /** A message in Seq order, once. */
  deliver: (message: ChatMessage) => void;
  /** A deleted message met during a refill (its tombstone), keyed for once-only delivery. */
  deleted: (message: ChatMessage, key: string) => void;
  pageSize: number;
}

/**
 * Each chat's messages exactly once and in Seq order: pushes go through a per-chat sequencer, and a
 * gap (or a reconnect) is filled from list-messages, the source of truth, retried with the backoff
 * until it succeeds. One refill per chat runs at a time; a request for another while it runs makes
 * it go round once more.
 */
export class ChatTracker {
  private readonly chats = new Map<string, ChatSequencer<ChatMessage>>();
  private readonly fills = new Map<string, { running: Promise<void>; again: boolean }>();
  private readonly retries = new Map<string, { timer: ReturnType<typeof setTimeout>; attempt: number }>();

  private readonly deps: ChatTrackerDeps;

  constructor(deps: ChatTrackerDeps) {
    this.deps = deps;
  }

  track(chatId: string, afterSeq: number): void {
    if (!this.chats.has(chatId)) this.chats.set(chatId, new ChatSequencer(afterSeq));
  }

  lastSeq(chatId: string): number | undefined {
    return this.chats.get(chatId)?.delivered;
  }

  /** A pushed (or refilled) message: delivered in order; a gap before it starts a refill (a refilled one closes the gap: ChatSequencer.offer). */
  receive(m: ChatMessage, refilled = false): void {
    const { deliver, gap } = this.sequencer(m.chatId, m.seq).offer(m, refilled);
    for (const d of deliver) this.deps.deliver(d);
    if (gap) void this.refill(m.chatId).catch(() => undefined);
  }

  refill(chatId: string): Promise<void> {
    const current = this.fills.get(chatId);
    if (current) {
      current.again = true;
      return current.running;
    }
    const entry = { running: Promise.resolve(), again: false };
    entry.running = (async () => {
      try {
        do {
          entry.again = false;
          await this.fillOnce(chatId);
        } while (entry.again && !this.deps.stopped());
        this.retries.delete(chatId);
      } catch {
        this.retryRefill(chatId);
      } finally {
        this.fills.delete(chatId);
      }
    })();
    this.fills.set(chatId, entry);
    return entry.running;
  }

  async refillAll(): Promise<void> {
    await Promise.allSettled([...this.chats.keys()].map((chatId) => this.refill(chatId)));
  }

  /** Waits until no refill is running. */
  async idle(): Promise<void> {
    while (this.fills.size > 0) await Promise.allSettled([...this.fills.values()].map((f) => f.running));
  }

  /** Cancels pending retries and waits for running refills (they stop at their next page). */
  async stop(): Promise<void> {
    for (const r of this.retries.values()) clearTimeout(r.timer);
    this.retries.clear();
    await Promise.allSettled([...this.fills.values()].map((f) => f.running));
  }

  /** A refill that failed (network, timeout, 5xx) is tried again with the backoff until it succeeds. */
  private retryRefill(chatId: string): void {
    if (this.deps.stopped()) return;
    const previous = this.retries.get(chatId);
    const attempt = (previous?.attempt ?? 0) + 1;
    clearTimeout(previous?.timer);
    const timer = setTimeout(() => void this.refill(chatId), this.deps.delay(attempt));
    this.retries.set(chatId, { timer, attempt });
  }

  private sequencer(chatId: string, seq: number): ChatSequencer<ChatMessage> {
    let s = this.chats.get(chatId);
    if (!s) {
      // A chat first seen through a push starts at that message; older history is the app's to load.
      s = new ChatSequencer(seq - 1);
      this.chats.set(chatId, s);
    }
    return s;
  }

  private async fillOnce(chatId: string): Promise<void> {
    for (;;) {
      const s = this.chats.get(chatId);
      if (!s || this.deps.stopped()) return;
      const res = await this.deps.request('GET', `/api/messenger/chats/${chatId}/messages?afterSeq=${s.delivered}&limit=${this.deps.pageSize}`);
      // Not a participant any more: nothing to refill, and nothing to retry.
      if (res.status === 404) return;
      if (!res.ok) throw new Error(`list-messages ${res.status}`);
      const { items, hasMore } = (await res.json()) as { items: Wire[]; hasMore?: boolean };
      for (const item of items) {
        const m = toChatMessage(item);
        if (m.deleted) this.deps.deleted(m, `delete:${m.messageId}`);
        this.receive(m, true);
      }
      // hasMore: the service says; an older one without it, a short page does.
      if (!(hasMore ?? items.length >= this.deps.pageSize)) return;
    }
  }
}
