import { Counter, Gauge, type Registry } from 'prom-client';
import { createLogger, type Logger } from './logger.ts';
import { withTimeout } from '../time.ts';
import { OBSERVABILITY_DEFAULTS } from './defaults.ts';

/** What one read of a database-backed gauge gives: one value, or one value per label set. */
export type DbGaugeValues<T extends string> = number | ReadonlyArray<{ labels: Partial<Record<T, string>>; value: number }>;

export interface DbGaugeConfig<T extends string> {
  name: string;
  help: string;
  labelNames?: readonly T[];
  /** The bounded query (capped counts, partial indexes): rejects when the database is unavailable. */
  read: () => Promise<DbGaugeValues<T>>;
  /** How long a scrape waits for the read before it keeps the last values. */
  timeoutMs?: number;
  /** Where the one warning per failure streak goes (default: the registry's logger, see setMetricsLogger). */
  log?: Logger;
}

export const DB_GAUGE_TIMEOUT_MS = OBSERVABILITY_DEFAULTS.dbGaugeTimeoutMs;

/** One database-backed gauge of a registry, as the staleness gauge and the failure counter see it. */
interface Tracked {
  name: string;
  gauge: Gauge<string>;
  /** The scrape's attempt in flight, if any (never rejects). */
  inFlight(): Promise<void> | undefined;
  staleSeconds(): number;
}

interface RegistryState {
  tracked: Map<string, Tracked>;
  log?: Logger;
  failures: Counter<'gauge'>;
}

const states = new WeakMap<Registry, RegistryState>();
let fallbackLog: Logger | undefined;

function stateOf(registry: Registry): RegistryState {
  let state = states.get(registry);
  if (state) return state;
  const tracked = new Map<string, Tracked>();
  // A scrape starts every metric's collect at once: after a turn of the event loop, every gauge of
  // this scrape has its read under way, and these two metrics report once those are done. Read on
  // their own, they report the state of the last scrape (and start no query).
  const collectAll = async () => {
    await new Promise(setImmediate);
    await Promise.all([...tracked.values()].map((t) => t.inFlight()));
  };
  new Gauge<'gauge'>({
    name: 'metrics_db_gauge_stale_seconds',
    help: 'Seconds since a database-backed gauge was last read successfully (0 when its last read succeeded); > 0 means /metrics shows its last known value',
    labelNames: ['gauge'],
    registers: [registry],
    async collect() {
      await collectAll();
      for (const t of tracked.values()) this.set({ gauge: t.name }, t.staleSeconds());
    },
  });
  const failures = new Counter<'gauge'>({
    name: 'metrics_db_gauge_failures_total',
    help: 'Scrapes whose read of a database-backed gauge failed or timed out (the gauge kept its last value)',
    labelNames: ['gauge'],
    registers: [registry],
    async collect() {
      await collectAll();
    },
  });
  state = { tracked, failures };
  states.set(registry, state);
  return state;
}

/** The logger database-backed gauges of this registry warn on (the app's logger). */
export function setMetricsLogger(registry: Registry, log: Logger): void {
  stateOf(registry).log = log;
}

/**
 * A gauge read from the database at scrape time that never fails the scrape: each scrape runs
 * `read` (at most one read in flight per gauge, so a hung database does not pile up queries) and
 * waits for it at most `timeoutMs`; on failure or timeout the gauge keeps its last values, the
 * failure counter `metrics_db_gauge_failures_total{gauge}` rises, `metrics_db_gauge_stale_seconds{gauge}`
 * shows how old the values are, and one warning is logged per failure streak (one info on recovery).
 * A read that outlives its scrape's timeout still sets the values when it finishes.
 */
export function dbGauge<T extends string>(registry: Registry, cfg: DbGaugeConfig<T>): Gauge<T> {
  const state = stateOf(registry);
  const existing = state.tracked.get(cfg.name);
  if (existing) return existing.gauge as unknown as Gauge<T>;
  const timeoutMs = cfg.timeoutMs ?? DB_GAUGE_TIMEOUT_MS;
  const log = () => cfg.log ?? state.log ?? (fallbackLog ??= createLogger('info'));

  let lastSuccessMs = Date.now();
  let failing = false;
  let reading: Promise<void> | undefined;
  let scraping: Promise<void> | undefined;

  const succeeded = () => {
    lastSuccessMs = Date.now();
    if (failing) log().info({ gauge: cfg.name }, 'database-backed gauge read again; its values are fresh');
    failing = false;
  };
  const failed = (err: unknown) => {
    state.failures.inc({ gauge: cfg.name });
    if (!failing) {
      log().warn({ gauge: cfg.name, err }, 'database-backed gauge could not be read; /metrics keeps its last value (see metrics_db_gauge_stale_seconds)');
    }
    failing = true;
  };
  /** The database read, shared by every scrape while it lasts; sets the values when it succeeds. */
  const read = () =>
    (reading ??= (async () => {
      const values = await cfg.read();
      gauge.reset();
      if (typeof values === 'number') gauge.set(values);
      else for (const { labels, value } of values) gauge.set(labels, value);
      succeeded();
    })().finally(() => {
      reading = undefined;
    }));
  /** One scrape's attempt, shared by the gauge and the staleness/failure metrics of the same scrape. */
  const collectOnce = () =>
    (scraping ??= withTimeout(read(), timeoutMs, `gauge ${cfg.name} read`)
      .catch(failed)
      .finally(() => {
        scraping = undefined;
      }));

  const gauge = new Gauge<T>({
    name: cfg.name,
    help: cfg.help,
    labelNames: cfg.labelNames ?? [],
    registers: [registry],
    async collect() {
      await collectOnce();
    },
  });
  state.tracked.set(cfg.name, {
    name: cfg.name,
    gauge: gauge as unknown as Gauge<string>,
    inFlight: () => scraping,
    staleSeconds: () => (failing ? (Date.now() - lastSuccessMs) / 1000 : 0),
  });
  return gauge;
}
