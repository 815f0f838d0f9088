/**
 * The ops console's public surface: what parts and modules register with it (failed rows they own,
 * backlog gauges), and what the app builds it with. The console (/ops) and its API (/api/ops) know
 * no module and no table of one.
 */
export type { ActorNames, BacklogMetric, FailureAction, FailureCursor, FailureFilter, FailureRow, FailureSource } from './types.ts';
export { createOpsConsole, type OpsConsole, type OpsConsoleDeps } from './console.ts';
export { opsSettings, type OpsSettings } from './settings.ts';
export { OPS_DEFAULTS, type OpsTuning } from './defaults.ts';
export { adminAuditSink } from './audit-sql.ts';
export { keysetAfter, keysetOrder } from './keyset.ts';
