/**
 * Where one event's commit → consumer time goes, for outbox-publish.ts's latency phase (b): the
 * bench's own instrumentation, nothing of it in the service. Per event it stamps
 *   claim    — the publisher's read of the pass that carried it began (BATCH_TIMING_CHANNEL),
 *   send     — the fenced publish (one Kafka transaction) began, and
 *   sent     — it returned (EndTxn answered),
 *   fetched  — the consumer's last Fetch answered before the handler ran,
 * and kafkajs's own request events give each API's round trips (count, p50/p95 ms; an
 * AddPartitionsToTxn count above EndTxn's means refused attempts retried by the client). All times are
 * the main thread's wall clock (performance.timeOrigin + now), as the bench's commit stamps.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import { Kafka } from 'kafkajs';
import type { EventBus, FencedPublisher, OutgoingMessage } from '../../src/platform/events/bus.ts';
import { BATCH_TIMING_CHANNEL, type BatchTiming } from '../../src/platform/jobs/batch-worker.ts';

const nowMs = () => performance.timeOrigin + performance.now();

interface Stamps {
  claim: number;
  send: number;
  sent: number;
}

export interface Breakdown {
  /** Call once the drain phase is over: only the latency phase is recorded. */
  start(): void;
  /** The handler's stamp of `messageId`, at `at`. */
  handled(messageId: string, at: number): void;
  /** Per part, p50/p95 ms over the events that have every stamp; and the request round trips. */
  report(committedAt: ReadonlyMap<string, number>): Record<string, unknown>;
}

type RequestEvent = { payload: { apiName: string; duration: number; sentAt: number; pendingDuration: number } };

/** Installs the hooks (kafkajs clients made after this call, the bus's fenced publisher) and returns the recorder. */
export function instrumentOutboxPath(bus: EventBus): Breakdown {
  let on = false;
  const requests = new Map<string, number[]>();
  const fetchEnds: number[] = [];
  const record = (side: string) => (e: RequestEvent) => {
    if (!on) return;
    const { apiName, duration } = e.payload;
    const key = `${side}.${apiName}`;
    let list = requests.get(key);
    if (!list) requests.set(key, (list = []));
    list.push(duration);
    if (side === 'consumer' && apiName === 'Fetch') fetchEnds.push(e.payload.sentAt + duration); // epoch ms from Date.now(), comparable to nowMs()
  };
  // The consumer's loop: a fetch, then its batches handled (inbox transactions, offset commits), then the next fetch.
  const cycle = { fetchMs: [] as number[], handleMs: [] as number[] };
  let fetchEndedAt = 0;
  const watchLoop = (client: { on(ev: string, fn: (e: { payload: { duration: number } }) => void): void; events: Record<string, string> }) => {
    client.on(client.events.FETCH_START!, () => {
      if (on && fetchEndedAt > 0) cycle.handleMs.push(Date.now() - fetchEndedAt);
    });
    client.on(client.events.FETCH!, (e) => {
      fetchEndedAt = Date.now();
      if (on) cycle.fetchMs.push(e.payload.duration);
    });
  };
  const proto = Kafka.prototype as unknown as Record<'producer' | 'consumer', (...args: unknown[]) => { on(ev: string, fn: (e: RequestEvent) => void): void; events: { REQUEST: string } }>;
  for (const side of ['producer', 'consumer'] as const) {
    const original = proto[side];
    proto[side] = function (this: unknown, ...args: unknown[]) {
      const client = original.apply(this, args);
      client.on(client.events.REQUEST, record(side));
      if (side === 'consumer') watchLoop(client as unknown as Parameters<typeof watchLoop>[0]);
      return client;
    };
  }

  const stamps = new Map<string, Stamps>();
  const handledAt = new Map<string, number>();
  /** The ids sent by the pass under way: its claim's stamp comes with its timing, published once it is sent. */
  let passIds: string[] = [];
  diagnostics_channel.subscribe(BATCH_TIMING_CHANNEL, (m) => {
    const t = m as BatchTiming;
    if (t.job !== 'outbox-publisher') return;
    for (const id of passIds) {
      const s = stamps.get(id);
      if (s) s.claim = performance.timeOrigin + t.claimStartedAt;
    }
    passIds = [];
  });
  const idOf = (m: OutgoingMessage) => String((m.headers as Record<string, unknown>)['message-id']);
  const originalFenced = bus.fencedPublisher?.bind(bus);
  if (originalFenced) {
    bus.fencedPublisher = (name: string): FencedPublisher => {
      const inner = originalFenced(name);
      return {
        ...inner,
        reset: () => inner.reset(),
        async publish(messages) {
          const send = nowMs();
          await inner.publish(messages);
          const sent = nowMs();
          if (!on) return;
          for (const m of messages) {
            const id = idOf(m);
            stamps.set(id, { claim: NaN, send, sent });
            passIds.push(id);
          }
        },
      };
    };
  }

  return {
    start() {
      on = true;
    },
    handled(messageId, at) {
      handledAt.set(messageId, at);
    },
    report(committedAt) {
      fetchEnds.sort((a, b) => a - b);
      const parts: Record<string, number[]> = { commitToClaim: [], claimToSend: [], sendToSent: [], sentToFetched: [], fetchedToHandled: [], total: [] };
      for (const [id, committed] of committedAt) {
        const s = stamps.get(id);
        const h = handledAt.get(id);
        if (!s || h === undefined) continue;
        const fetched = lastBefore(fetchEnds, h);
        parts.commitToClaim!.push(s.claim - committed);
        parts.claimToSend!.push(s.send - s.claim);
        parts.sendToSent!.push(s.sent - s.send);
        parts.sentToFetched!.push(fetched - s.sent);
        parts.fetchedToHandled!.push(h - fetched);
        parts.total!.push(h - committed);
      }
      const summary = (xs: number[]) => {
        xs.sort((a, b) => a - b);
        const at = (p: number) => Number((xs[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN).toFixed(1));
        return { n: xs.length, p50: at(0.5), p95: at(0.95), max: Number((xs.at(-1) ?? NaN).toFixed(1)) };
      };
      return {
        perEventMs: Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, summary(v)])),
        requestsMs: Object.fromEntries([...requests].map(([k, v]) => [k, summary(v)])),
        consumerLoopMs: { fetch: summary(cycle.fetchMs), handle: summary(cycle.handleMs) },
      };
    },
  };
}

/** The largest value ≤ `t` in sorted `xs` (NaN when none). */
function lastBefore(xs: readonly number[], t: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? NaN : xs[lo - 1]!;
}
