/**
 * The floods of fairness.ts, each one user's, run in a process of their own (forked by fairness.ts)
 * so their CPU does not delay the victim's timings in the bench's process. Each runs until the bench
 * sends 'stop', then reports what the server answered ({ type: 'done', ...counts }).
 */
import WebSocket from 'ws';

export type FloodKind = 'typing' | 'negotiate' | 'events' | 'groupSends';

export interface FloodPlan {
  kind: FloodKind;
  baseUrl: string;
  /** The flooding user's token. */
  token: string;
  /** typing, groupSends: the chat; events: the cursor to read after. */
  chatId?: string;
  after?: string;
  /** typing: invocations per frame and ms between frames; negotiate, events: parallel loops; groupSends: sends a minute. */
  perFrame?: number;
  frameEveryMs?: number;
  parallel?: number;
  sendsPerMinute?: number;
}

const RECORD_SEPARATOR = '\u001e';
/** A flood's request still unanswered after this is given up (a stalled server must not hold the flood's stop). */
const REQUEST_TIMEOUT_MS = 10_000;
const timeout = () => AbortSignal.timeout(REQUEST_TIMEOUT_MS);

type Counts = Record<string, number>;
const count = (counts: Counts, key: string | number) => void (counts[String(key)] = (counts[String(key)] ?? 0) + 1);

/** Hammers `call` from `parallel` loops until stopped, counting answers by status. */
async function loops(parallel: number, stopped: () => boolean, call: () => Promise<Response>): Promise<Counts> {
  const statuses: Counts = {};
  let okMs = 0;
  const loop = async () => {
    while (!stopped()) {
      try {
        const t0 = performance.now();
        const res = await call();
        await res.arrayBuffer();
        count(statuses, res.status);
        if (res.ok) okMs += performance.now() - t0;
      } catch {
        count(statuses, 'error');
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, loop));
  // How long an answered request took on average: what one of them costs the server, under the flood.
  const ok = Object.entries(statuses).filter(([k]) => k.startsWith('2')).reduce((n, [, v]) => n + v, 0);
  return { ...statuses, ...(ok > 0 ? { okMeanMs: Math.round(okMs / ok) } : {}) };
}

/** One SignalR JSON connection that sends `perFrame` Typing invocations in one frame every `frameEveryMs`, reconnecting when closed. */
async function typingFlood(plan: FloodPlan, stopped: () => boolean): Promise<Counts> {
  const counts: Counts = { frames: 0, invocations: 0, closes: 0, completionErrors: 0 };
  const invocation = JSON.stringify({ type: 1, target: 'Typing', arguments: [plan.chatId] }) + RECORD_SEPARATOR;
  const frame = invocation.repeat(plan.perFrame!);
  counts.frameBytes = Buffer.byteLength(frame);
  const auth = { authorization: `Bearer ${plan.token}` };
  while (!stopped()) {
    const negotiated = await fetch(`${plan.baseUrl}/hubs/messenger/negotiate?negotiateVersion=1`, { method: 'POST', headers: auth, signal: timeout() }).catch(() => undefined);
    if (negotiated?.status !== 200) {
      count(counts, `negotiate ${negotiated?.status ?? 'error'}`);
      await negotiated?.arrayBuffer();
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    const { connectionToken } = (await negotiated.json()) as { connectionToken: string };
    const socket = new WebSocket(`${plan.baseUrl.replace(/^http/, 'ws')}/hubs/messenger?id=${encodeURIComponent(connectionToken)}`, { headers: auth });
    await new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const stopCheck = setInterval(() => stopped() && socket.terminate(), 100);
      socket.on('open', () => socket.send(JSON.stringify({ protocol: 'json', version: 1 }) + RECORD_SEPARATOR));
      socket.on('message', (data) => {
        const text = data.toString();
        if (text.includes('"error"') && text.includes('"type":3')) counts.completionErrors! += text.split('"type":3').length - 1;
        if (text.includes('"type":7')) count(counts, `close message: ${/"error":"([^"]{0,80})/.exec(text)?.[1] ?? 'no reason'}`);
        if (timer !== undefined || !text.startsWith('{}')) return;
        // Handshake answered: flood on schedule.
        timer = setInterval(() => {
          if (socket.readyState !== WebSocket.OPEN) return;
          socket.send(frame);
          counts.frames! += 1;
          counts.invocations! += plan.perFrame!;
        }, plan.frameEveryMs);
      });
      socket.on('error', () => count(counts, 'socket error'));
      socket.on('close', () => {
        clearInterval(timer);
        clearInterval(stopCheck);
        if (!stopped()) counts.closes! += 1;
        resolve();
      });
    });
    if (!stopped()) await new Promise((r) => setTimeout(r, 100));
  }
  return counts;
}

/** Sends to the chat at `sendsPerMinute`, evenly spaced (the send limit's rate). */
async function groupSendFlood(plan: FloodPlan, stopped: () => boolean): Promise<Counts> {
  const statuses: Counts = {};
  const spacingMs = 60_000 / plan.sendsPerMinute!;
  const pending: Promise<void>[] = [];
  for (let i = 0; !stopped(); i++) {
    const send = fetch(`${plan.baseUrl}/api/messenger/chats/${plan.chatId}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${plan.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'Text', body: `flood ${i}` }),
      signal: timeout(),
    }).then(
      async (res) => void (await res.arrayBuffer(), count(statuses, res.status)),
      () => count(statuses, 'error'),
    );
    pending.push(send);
    await new Promise((r) => setTimeout(r, spacingMs));
  }
  await Promise.all(pending);
  return statuses;
}

export function runFlood(plan: FloodPlan, stopped: () => boolean): Promise<Counts> {
  const auth = { authorization: `Bearer ${plan.token}` };
  switch (plan.kind) {
    case 'typing':
      return typingFlood(plan, stopped);
    case 'negotiate':
      return loops(plan.parallel!, stopped, () => fetch(`${plan.baseUrl}/hubs/messenger/negotiate?negotiateVersion=1`, { method: 'POST', headers: auth, signal: timeout() }));
    case 'events':
      return loops(plan.parallel!, stopped, () => fetch(`${plan.baseUrl}/api/events?after=${plan.after}&limit=500`, { headers: auth, signal: timeout() }));
    case 'groupSends':
      return groupSendFlood(plan, stopped);
  }
}

/** The child process: one flood per process, started by the bench's message, stopped by 'stop'. */
export async function floodProcess(): Promise<void> {
  const plan = await new Promise<FloodPlan>((resolve) => process.once('message', (m) => resolve(m as FloodPlan)));
  let stop = false;
  process.once('message', () => (stop = true));
  const counts = await runFlood(plan, () => stop);
  process.send!({ type: 'done', counts });
  process.disconnect();
}
