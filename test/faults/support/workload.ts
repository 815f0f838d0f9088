import type { Stack } from './stack.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * One worker's load and its invariant. A workload drives its load through a replica that is never
 * killed (HTTP, the hub) while the replica running the jobs is killed and restarted; at the end it
 * says what the seed promised and what happened.
 */
export interface Verdict {
  /** Items the seed says must arrive (events, deliveries, notifications, replica updates). */
  expected: number;
  /** Of those, how many arrived at least once. */
  seen: number;
  /** Arrivals beyond the first per item (at-least-once copies and repeats), whatever their cause. */
  duplicated: number;
  /** Broken promises, in words; empty when the invariant holds. */
  problems: string[];
}

export interface Workload {
  /** The fault name of the summary line, e.g. `sigkill-outbox-publisher`. */
  fault: string;
  /** Ends the load (the backlog it left is then drained). */
  stop(): Promise<void>;
  /** Everything the load started has settled: nothing left to deliver, close or send. */
  drained(): Promise<boolean>;
  /**
   * The worker's work done so far, as a count that only grows (rows closed, events published, …):
   * when it grew during a life of the worker process, a kill of that life cut a working worker.
   */
  progress(): Promise<number>;
  verdict(run: FaultRun): Promise<Verdict>;
}

export interface FaultRun {
  /** How many times the work was cut (a kill, an outage), which bounds the repeats a seed allows. */
  kills: number;
  /** Requests of the load may fail (a dependency was down): only what was acknowledged is expected. */
  loadMayFail?: boolean;
}

export interface KafkaEvent {
  messageId: string;
  eventType: string;
  key: string | null;
  payload: Record<string, unknown>;
}

/** Every message of a product topic in the stack's broker (waits until at least `atLeast` are there). */
export async function topicEvents(stack: Stack, topic: string, atLeast = 0): Promise<KafkaEvent[]> {
  const messages = await stack.kafka.readTopic(stack.kafka.topic(topic), { atLeast, timeoutMs: 30_000 }).catch((err: unknown) => {
    // A topic nobody produced to may not exist yet; nothing expected means nothing missing.
    if (atLeast === 0) return [];
    throw err;
  });
  return messages.map((m) => ({
    messageId: m.headers['message-id'] ?? '',
    eventType: m.headers['event-type'] ?? '',
    key: m.key,
    payload: JSON.parse(m.value?.toString() ?? 'null') as Record<string, unknown>,
  }));
}

/** How often each value occurs. */
export function countBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(keyOf(item), (counts.get(keyOf(item)) ?? 0) + 1);
  return counts;
}

/** A problem line naming a few examples of what is missing. */
export function missingProblem(what: string, missing: readonly string[]): string[] {
  return missing.length === 0 ? [] : [`${missing.length} ${what} missing, e.g. ${missing.slice(0, 3).join(', ')}`];
}

/** Load steps that failed (HTTP on the replica that is never killed must not fail, unless a dependency was down). */
export function loadProblems(name: string, load: { failures(): number; errors: string[] }, run: FaultRun): string[] {
  return load.failures() === 0 || run.loadMayFail === true ? [] : [`${load.failures()} ${name} load steps failed: ${load.errors.join(' | ')}`];
}

/**
 * Stops every load, then waits up to `timeoutMs` for every backlog to drain. Resolves with the
 * timeout's error rather than failing: each worker's test then names what is left of its own.
 */
export async function stopAndDrain(workloads: readonly Workload[], timeoutMs = 150_000): Promise<unknown> {
  for (const w of workloads) await w.stop();
  return waitFor('every backlog to drain', async () => (await Promise.all(workloads.map((w) => w.drained().catch(() => false)))).every(Boolean), timeoutMs).then(
    () => undefined,
    (err: unknown) => err,
  );
}

/**
 * Runs a scenario once, at module level, for the tests of its file to share; each test calls the
 * returned function, which throws the scenario's failure in every one of them. Not in a before
 * hook: the support's file-end cleanups (database, topics, child processes) registered inside a
 * hook would run when the hook ends.
 */
export async function runScenario<T>(scenario: () => Promise<T>): Promise<() => T> {
  const outcome = await scenario().then(
    (value) => ({ value }),
    (err: unknown) => ({ error: err instanceof Error ? err : new Error(String(err)) }),
  );
  return () => {
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  };
}
