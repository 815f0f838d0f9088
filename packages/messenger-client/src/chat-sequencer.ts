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

  /**
   * Takes a message from a push or a refill; duplicates (Seq already delivered or held) are dropped.
   * `refilled`: it came from a list-messages page read after `delivered`, which holds every message
   * this reader can read from there on, so a Seq below it that never came is none of theirs (a
   * message withheld from them, as from a user who blocked its sender): the sequencer moves past it
   * instead of waiting for it, and refilling, forever.
   */
  offer(message: M, refilled = false): Offered<M> {
    if (message.seq <= this.delivered) return { deliver: [], gap: this.pending.size > 0 };
    const deliver: M[] = [];
    if (refilled && message.seq > this.delivered + 1) {
      for (const seq of [...this.pending.keys()].filter((s) => s < message.seq).sort((a, b) => a - b)) {
        deliver.push(this.pending.get(seq)!);
        this.pending.delete(seq);
      }
      this.delivered = message.seq - 1;
    }
    if (this.pending.has(message.seq)) return { deliver: [...deliver, ...this.drain()], gap: this.pending.size > 0 };
    this.pending.set(message.seq, message);
    if (this.pending.size > MAX_PENDING) this.pending.delete(Math.max(...this.pending.keys()));
    deliver.push(...this.drain());
    return { deliver, gap: this.pending.size > 0 };
  }

  /** The held messages that now follow `delivered` without a gap, taken out in Seq order. */
  private drain(): M[] {
    const out: M[] = [];
    for (let next = this.pending.get(this.delivered + 1); next; next = this.pending.get(this.delivered + 1)) {
      this.pending.delete(next.seq);
      this.delivered = next.seq;
      out.push(next);
    }
    return out;
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
