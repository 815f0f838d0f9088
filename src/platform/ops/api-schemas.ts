import { Type } from '@sinclair/typebox';
import { OPS_DEFAULTS } from './defaults.ts';
import { named } from '../http/index.ts';
import { BoundedInt, Nullable, Text, Timestamp, Uuid } from '../types/index.ts';

/** The /api/ops request and response schemas, each published as a named component. */

const Str = Type.String();
/** A moment, written as ISO-8601 by the serializer: the handlers hand over Dates or strings. */
const Instant = Type.Unsafe<Date | string>({ type: 'string', format: 'date-time' });
const Counts = Type.Record(Type.String(), Type.Number());
const Labels = Type.Record(Type.String(), Type.String());

export const JobName = Type.Object({ name: Text({ minLength: 1, maxLength: 100, pattern: '^[a-z0-9-]+$' }) });

export const OpsRecentRun = named('OpsRecentRun', Type.Object({ at: Str, outcome: Str, durationMs: Type.Number(), counts: Counts, error: Type.Optional(Str) }));

export const OpsJob = named(
  'OpsJob',
  Type.Object({
    name: Str,
    schedule: Type.Object({ every: Type.Optional(Type.Number()), cron: Type.Optional(Str), description: Str }),
    singleRunner: Type.Boolean(),
    lockKey: Nullable(Str),
    wakeChannel: Nullable(Str),
    running: Type.Boolean({ description: 'a run is going on the replica that answered' }),
    nextRunAt: Type.Union([Instant, Type.Null()], { description: "the next timer tick on the replica that answered; null where its runner is not started (JOBS_ENABLED=false) or stopping" }),
    lastRunAt: Nullable(Instant),
    lastSuccessAt: Nullable(Instant),
    lastOutcome: Nullable(Str),
    lastCounts: Nullable(Counts),
    lastDurationMs: Nullable(Type.Number()),
    lastError: Nullable(Str),
    runsTotal: Type.Integer(),
    failuresTotal: Type.Integer(),
    recentRuns: Type.Array(OpsRecentRun),
    pausedAt: Nullable(Instant),
    pausedBy: Nullable(Str),
    pauseReason: Nullable(Str),
    pauseUntil: Type.Union([Instant, Type.Null()], { description: 'when the operator who paused it expects to resume it (it does not resume by itself)' }),
    lease: Nullable(
      Type.Object(
        {
          holder: Str,
          token: Str,
          state: Type.Union([Type.Literal('held'), Type.Literal('expired'), Type.Literal('released')], {
            description: 'held: the lock is held and the lease runs; expired: the lock is still held but its holder stopped renewing (a takeover is due); released: no run holds the lock (the row outlives the run)',
          }),
          acquiredAt: Instant,
          expiresAt: Instant,
          asOf: Instant,
        },
        { description: 'the single-runner lease: its last holder, whether it holds the lock now, and until when; times by the database clock, asOf the moment read' },
      ),
    ),
  }),
);

export const OpsJobList = named('OpsJobList', Type.Object({ jobs: Type.Array(OpsJob) }));

export const OpsRunResult = named(
  'OpsRunResult',
  Type.Object({
    jobRunId: Str,
    outcome: Str,
    durationMs: Type.Number(),
    counts: Counts,
    error: Type.Optional(Str),
    skipReason: Type.Optional(Str),
  }),
);

export const OpsPauseState = named(
  'OpsPauseState',
  Type.Object({ name: Str, paused: Type.Boolean(), reason: Type.Optional(Str), until: Type.Optional(Type.Union([Instant, Type.Null()])) }),
);

/** The reason a pause of a job gives, and when it is expected to end: shown in the overview and in the job's alerts. */
export const PAUSE_REASON_MAX = 300;
export const OpsPauseBody = named(
  'OpsJobPause',
  Type.Object(
    {
      reason: Text({ minLength: 1, maxLength: PAUSE_REASON_MAX, pattern: '\\S', description: 'why the job is paused (a planned pause is told from an outage by it)' }),
      until: Type.Optional(Timestamp),
    },
    { additionalProperties: false, description: 'until: when the operator expects to resume it (ISO-8601, in the future); absent: until resumed' },
  ),
);

export const OpsAlert = named(
  'OpsAlert',
  Type.Object({
    alert: Str,
    severity: Str,
    summary: Str,
    runbook: Str,
    expr: Str,
    state: Type.Union([Type.Literal('firing'), Type.Literal('pending')]),
    labels: Labels,
    annotations: Type.Record(Type.String(), Type.String(), {
      description: 'pause, pause_reason, pause_until: the alert watches a job an operator paused (a planned pause, not an outage, until its expected end passes)',
    }),
    value: Type.Number(),
    activeSince: Str,
  }),
);

export const OpsAlerts = named(
  'OpsAlerts',
  Type.Object({
    evaluatedAt: Nullable(Instant),
    historySeconds: Type.Integer(),
    rules: Type.Integer(),
    alerts: Type.Array(OpsAlert),
    errors: Type.Array(Type.Object({ alert: Str, error: Str })),
    held: Type.Array(
      Type.Object({ alert: Str, severity: Str, summary: Str, runbook: Str, labels: Labels, annotations: Type.Record(Type.String(), Type.String()) }),
      { description: 'rules a planned pause of a job holds back (they read job_paused): silent by design until the pause\'s expected end passes, with the pause in annotations' },
    ),
  }),
);

export const OpsOverview = named(
  'OpsOverview',
  Type.Object({
    generatedAt: Instant,
    pollFloorMs: Type.Integer({ description: 'the server builds the overview at most once per this many ms; poll no faster' }),
    replica: Str,
    jobs: Type.Array(OpsJob),
    backlogs: Type.Array(
      Type.Object({
        metric: Str,
        title: Str,
        alert: Nullable(Str),
        series: Type.Array(
          Type.Object({
            labels: Labels,
            value: Type.Number(),
            trend: Type.Array(Type.Number(), { description: 'the recent past, oldest first, up to 60 points evenly picked over trendSeconds (the sampler keeps one sample per 15 s)' }),
          }),
        ),
      }),
    ),
    trendSeconds: Type.Integer({ description: 'the time the backlogs\' trends span' }),
    replicas: Type.Array(Type.Object({ holder: Str, hubConnections: Type.Integer(), seenAt: Instant, current: Type.Boolean() })),
    dependencies: Type.Record(Type.String(), Str),
    alerts: OpsAlerts,
  }),
);

export const OpsAuditEntry = named(
  'OpsAuditEntry',
  Type.Object({
    id: Uuid,
    at: Str,
    actor: Str,
    role: Str,
    action: Str,
    target: Str,
    filter: Type.Record(Type.String(), Type.Unknown()),
    dryRun: Type.Boolean(),
    matched: Nullable(Type.Integer()),
    changed: Type.Integer(),
    status: Type.Union([Type.Literal('running'), Type.Literal('done'), Type.Literal('failed'), Type.Literal('refused')], {
      description: 'running → done / failed for a bulk action; done or failed for an admin action; refused: a 403 (a viewer acting, an admin identity knows as not Active, a token without the right)',
    }),
    finishedAt: Nullable(Instant),
    error: Nullable(Str),
    httpStatus: Nullable(Type.Integer({ description: 'The HTTP status the caller was answered; null on rows written before it was kept' })),
    actorName: Type.Optional(
      Type.Union([Str, Type.Null()], { description: "in the list: the actor's display name where a module knows the user (the messenger's replica of identity); null: only the id is known" }),
    ),
  }),
);

export const OpsAuditList = named(
  'OpsAuditList',
  Type.Object({
    items: Type.Array(OpsAuditEntry),
    next: Type.Union([Str, Type.Null()], { description: 'pass as `after` for the next (older) page; null: the last page' }),
  }),
);
export const AuditQuery = Type.Object(
  {
    before: Type.Optional(Timestamp),
    after: Type.Optional(Text({ minLength: 1, maxLength: 400, description: 'the `next` of the previous page (opaque)' })),
    limit: Type.Optional(BoundedInt({ minimum: 1, maximum: 200, default: OPS_DEFAULTS.opsAuditPageDefault })),
  },
  { additionalProperties: false },
);
export const AuditParams = Type.Object({ id: Uuid });

export const FailureKindParams = Type.Object({ kind: Text({ minLength: 1, maxLength: 60, pattern: '^[a-z0-9-]+$' }) });

const filterFields = {
  from: Type.Optional(Timestamp),
  to: Type.Optional(Timestamp),
  errorCode: Type.Optional(Text({ minLength: 1, maxLength: 200 })),
  field: Type.Optional(Text({ minLength: 1, maxLength: 60, pattern: '^[A-Za-z0-9_]+$' })),
  value: Type.Optional(Text({ minLength: 1, maxLength: 200 })),
};

export const FailureQuery = Type.Object(
  {
    ...filterFields,
    limit: Type.Optional(BoundedInt({ minimum: 1, maximum: 500, default: OPS_DEFAULTS.opsFailuresPageDefault, description: 'rows a page holds' })),
    after: Type.Optional(Text({ minLength: 1, maxLength: 400, description: 'the `next` of the previous page (opaque): the rows after it, in the same order' })),
  },
  { additionalProperties: false },
);
export const FailureRowParams = Type.Object({ kind: FailureKindParams.properties.kind, id: Text({ minLength: 1, maxLength: 200 }) });

/** The most rows one bulk action changes; a larger set takes several actions (each audited). */
export const BULK_MAX_ROWS = 10_000;

export const BulkActionBody = named(
  'OpsBulkAction',
  Type.Object(
    {
      action: Type.Union([Type.Literal('retry'), Type.Literal('requeue'), Type.Literal('discard'), Type.Literal('replay')]),
      filter: Type.Optional(
        Type.Object(
          { ...filterFields, ids: Type.Optional(Type.Array(Text({ minLength: 1, maxLength: 200 }), { minItems: 1, maxItems: 100, description: 'only these rows (a row, or the rows ticked in the console)' })) },
          { additionalProperties: false },
        ),
      ),
      dryRun: Type.Optional(Type.Boolean({ default: true, description: 'true (the default): only count and show which rows would change' })),
      max: Type.Optional(BoundedInt({ minimum: 1, maximum: BULK_MAX_ROWS, default: 1000 })),
    },
    { additionalProperties: false },
  ),
);

export const OpsFailureRow = named(
  'OpsFailureRow',
  Type.Object({
    id: Str,
    at: Str,
    errorCode: Nullable(Str),
    traceId: Nullable(Str),
    traceUrl: Nullable(Str),
    fields: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Null()])),
  }),
);

export const OpsFailureKind = named(
  'OpsFailureKind',
  Type.Object({
    kind: Str,
    title: Str,
    alert: Str,
    runbook: Str,
    fields: Type.Array(Str),
    actions: Type.Array(Str, { description: 'empty: read-only' }),
    worker: Type.Union([Str, Type.Null()], { description: 'the job that takes a retried or requeued row up (due now); null: none (a replayed record goes to its consumer)' }),
    count: Nullable(Type.Integer({ description: 'null: the rows cannot be read now (e.g. the dead letters while Kafka is down)' })),
  }),
);
export const OpsFailureKinds = named('OpsFailureKinds', Type.Object({ kinds: Type.Array(OpsFailureKind) }));
export const OpsFailureList = named(
  'OpsFailureList',
  Type.Object({
    kind: OpsFailureKind,
    total: Type.Integer({ description: 'rows the filter matches, over every page' }),
    items: Type.Array(OpsFailureRow),
    next: Type.Union([Str, Type.Null()], { description: 'pass as `after` for the next page; null: this is the last page' }),
  }),
);
export const OpsFailureDetail = named('OpsFailureDetail', Type.Object({ kind: OpsFailureKind, row: OpsFailureRow }));

export const OpsDryRun = named(
  'OpsBulkDryRun',
  Type.Object({ dryRun: Type.Literal(true), matched: Type.Integer(), wouldChange: Type.Integer(), sample: Type.Array(OpsFailureRow), auditId: Uuid }),
);
export const OpsBulkStarted = named('OpsBulkStarted', Type.Object({ dryRun: Type.Literal(false), matched: Type.Integer(), auditId: Uuid, ratePerSecond: Type.Number() }));
