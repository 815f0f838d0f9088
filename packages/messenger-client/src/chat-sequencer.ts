/**
 * Per-chat ordering and dedupe for the client (seed 000: realtime is not the source of truth; the
 * client dedupes by (ChatId, Seq) / MessageId and orders by Seq). Pure: no I/O, no timers.
 */

export interface SequencedMessage {
  chatId: string;
  messageId: string;
  seq: number;
}

export interface Offered<M> {
  /** Messages now deliverable, in Seq order (possibly none). */
  deliver: M[];
  /** A Seq is missing before what is held back: fetch list-messages after `delivered`. */
  gap: boolean;
}

/** Held-back messages per chat beyond which the oldest are dropped (the REST refill brings them back). */
const MAX_PENDING = 1000;

export class ChatSequencer<M extends SequencedMessage> {
  /** Highest Seq handed to the application; every Seq up to it was delivered exactly once. */
  delivered: number;
  private readonly pending = new Map<number, M>();

  constructor(afterSeq = 0) {
    this.delivered = afterSeq;
  }

  get waiting(): number {
    return this.pending.size;
  }

  /** Takes a message from a push or a refill; duplicates (Seq already delivered or held) are dropped. */
  offer(message: M): Offered<M> {
    if (message.seq <= this.delivered || this.pending.has(message.seq)) return { deliver: [], gap: this.pending.size > 0 };
    this.pending.set(message.seq, message);
    if (this.pending.size > MAX_PENDING) this.pending.delete(Math.max(...this.pending.keys()));
    const deliver: M[] = [];
    for (let next = this.pending.get(this.delivered + 1); next; next = this.pending.get(this.delivered + 1)) {
      this.pending.delete(next.seq);
      this.delivered = next.seq;
      deliver.push(next);
    }
    return { deliver, gap: this.pending.size > 0 };
  }
}

/** Remembers recently seen keys (edits, deletes: `${MessageId}:${EditedAt}`), bounded. */
export class RecentKeys {
  private readonly keys = new Set<string>();
  private readonly limit: number;
  constructor(limit = 10_000) {
    this.limit = limit;
  }
  /** True the first time a key is seen. */
  first(key: string): boolean {
    if (this.keys.has(key)) return false;
    this.keys.add(key);
    if (this.keys.size > this.limit) this.keys.delete(this.keys.values().next().value!);
    return true;
  }
}
