import { OPS_DEFAULTS } from './defaults.ts';
import { sql } from 'drizzle-orm';
import type { Registry } from 'prom-client';
import { query, type Db } from '../db/index.ts';
import type { JobInfo } from '../jobs/index.ts';
import type { Logger } from '../observability/index.ts';
import type { Clock } from '../time.ts';
import { annotatePauses } from './alert-pauses.ts';
import type { AlertEvaluator, AlertsView } from './alerts.ts';
import type { BacklogMetric } from './types.ts';

/**
 * The console's overview, built from what already exists: the runner's job listing and the
 * single-runner leases (platform.job_leases), the backlog gauges in the metrics registry (read as a
 * scrape reads them), each replica's heartbeat (platform.ops_replicas), the readiness checks and
 * the alert evaluator. One build answers every caller for `floorMs` (the server-side floor of the
 * console's polling), so any number of open consoles cost one build per floor.
 */

/**
 * A single-runner lease as it stands, not as its row reads: the row outlives the run (nobody deletes
 * it), so a run of 4 ms leaves an expiry minutes ahead. `held`: the holder's lock session still holds
 * the advisory lock and the lease runs; `expired`: the lock is still held but the holder stopped
 * renewing (frozen or stuck: the next replica to try takes it over); `released`: no session holds
 * the lock (the run ended, or its session died), whatever the expiry says.
 */
export type LeaseState = 'held' | 'expired' | 'released';

export interface Lease {
  holder: string;
  token: string;
  state: LeaseState;
  acquiredAt: Date;
  expiresAt: Date;
  /** The database's clock at the read: the times above are its, so relative times are taken from it. */
  asOf: Date;
}

export interface Overview {
  generatedAt: string;
  pollFloorMs: number;
  replica: string;
  jobs: (JobInfo & { lease: Lease | null })[];
  backlogs: { metric: string; title: string; alert: string | null; series: { labels: Record<string, string>; value: number; trend: number[] }[] }[];
  /** The time the backlogs' trends span, oldest sample to now (the alert sampler's history). */
  trendSeconds: number;
  replicas: { holder: string; hubConnections: number; seenAt: Date; current: boolean }[];
  dependencies: Record<string, string>;
  alerts: AlertsView;
}

export interface OverviewDeps {
  db: Db;
  log: Logger;
  clock: Clock;
  registry: Registry;
  jobs: () => Promise<JobInfo[]>;
  readiness: () => Promise<{ name: string; status: string }[]>;
  alerts: AlertEvaluator;
  backlogs: () => readonly BacklogMetric[];
  /** This replica's name in ops_replicas. */
  holder: string;
  hubConnections: () => number;
  floorMs: number;
  /** A replica not seen for this long is left out. */
  replicaStaleMs: number;
}

// The advisory lock of a key shows in pg_locks as classid (high half) and objid (low half), as
// lease-sql.ts's takeover reads it.
async function readLeases(db: Db): Promise<Map<string, Lease>> {
  const { rows } = await query<Lease & { name: string }>(
    db,
    sql`select l.name, l.holder, l.token::text as token, l.acquired_at as "acquiredAt", l.expires_at as "expiresAt", clock_timestamp() as "asOf",
               case when not exists (
                      select 1 from pg_locks k
                       where k.locktype = 'advisory' and k.granted and k.pid = l.backend_pid and k.objsubid = 1
                         and ((k.classid::bigint << 32) | k.objid::bigint) = hashtext(l.name)::bigint) then 'released'
                    when l.expires_at < clock_timestamp() then 'expired'
                    else 'held' end as state
          from platform.job_leases l`,
  );
  return new Map(rows.map(({ name, ...lease }) => [name, lease]));
}

/** This replica's heartbeat: its hub connections, now (database clock). */
export async function beat(db: Db, holder: string, hubConnections: number): Promise<void> {
  await query(
    db,
    sql`insert into platform.ops_replicas (holder, hub_connections, seen_at) values (${holder}, ${hubConnections}, now())
        on conflict (holder) do update set hub_connections = excluded.hub_connections, seen_at = excluded.seen_at`,
  );
}

async function readReplicas(db: Db, staleMs: number, holder: string): Promise<Overview['replicas']> {
  const { rows } = await query<{ holder: string; hubConnections: number; seenAt: Date }>(
    db,
    sql`select holder, hub_connections as "hubConnections", seen_at as "seenAt" from platform.ops_replicas
         where seen_at > now() - make_interval(secs => ${staleMs / 1000}) order by holder`,
  );
  return rows.map((r) => ({ ...r, current: r.holder === holder }));
}

/** The runner's listing with each single-runner job's lease (holder, expiry). */
export async function jobsWithLeases(db: Db, jobs: JobInfo[]): Promise<Overview['jobs']> {
  const leases = await readLeases(db).catch(() => new Map<string, Lease>());
  return jobs.map((j) => ({ ...j, lease: (j.lockKey && leases.get(j.lockKey)) || null }));
}

/** At most this many points a sparkline: evenly picked from the samples kept, the newest always in. */
export const TREND_POINTS = OPS_DEFAULTS.opsTrendPoints;

function trendOf(alerts: AlertEvaluator, metric: string, labels: Record<string, string>): number[] {
  const key = JSON.stringify(labels);
  const points = alerts.series(metric).find((s) => JSON.stringify(s.labels) === key)?.points ?? [];
  if (points.length <= TREND_POINTS) return points.map((p) => p.value);
  const step = (points.length - 1) / (TREND_POINTS - 1);
  return Array.from({ length: TREND_POINTS }, (_, i) => points[Math.round(i * step)]!.value);
}

async function readBacklogs(registry: Registry, wanted: readonly BacklogMetric[], alerts: AlertEvaluator): Promise<Overview['backlogs']> {
  const out: Overview['backlogs'] = [];
  for (const b of wanted) {
    const metric = registry.getSingleMetric(b.metric);
    const values = metric ? (await metric.get()).values : [];
    out.push({
      metric: b.metric,
      title: b.title,
      alert: b.alert ?? null,
      series: values.map((v) => {
        const labels = Object.fromEntries(Object.entries(v.labels).map(([k, l]) => [k, String(l)]));
        return { labels, value: v.value, trend: trendOf(alerts, b.metric, labels) };
      }),
    });
  }
  return out;
}

async function build(deps: OverviewDeps): Promise<Overview> {
  // Fresh for every build (at most one per floor); the sampler runs from the first look on.
  await deps.alerts.tick();
  deps.alerts.start();
  await beat(deps.db, deps.holder, deps.hubConnections()).catch((err: unknown) => deps.log.warn({ err }, 'ops heartbeat could not be written'));
  const [jobs, backlogs, replicas, readiness] = await Promise.all([
    deps.jobs().then((list) => jobsWithLeases(deps.db, list)),
    readBacklogs(deps.registry, deps.backlogs(), deps.alerts),
    readReplicas(deps.db, deps.replicaStaleMs, deps.holder).catch(() => []),
    deps.readiness(),
  ]);
  return {
    generatedAt: new Date().toISOString(),
    pollFloorMs: deps.floorMs,
    replica: deps.holder,
    jobs,
    backlogs,
    replicas,
    dependencies: Object.fromEntries(readiness.map((r) => [r.name, r.status])),
    trendSeconds: deps.alerts.view().historySeconds,
    alerts: annotatePauses(deps.alerts.view(), jobs, deps.clock.now()),
  };
}

/** The overview, built at most once per floorMs (concurrent callers share the build in flight). */
export function overviewOf(deps: OverviewDeps): () => Promise<Overview> {
  let last: { at: number; overview: Overview } | undefined;
  let inFlight: Promise<Overview> | undefined;
  return () => {
    if (last && performance.now() - last.at < deps.floorMs) return Promise.resolve(last.overview);
    inFlight ??= build(deps)
      .then((overview) => {
        last = { at: performance.now(), overview };
        return overview;
      })
      .finally(() => (inFlight = undefined));
    return inFlight;
  };
}
