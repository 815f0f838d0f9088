import { DB_DEFAULTS, type DbTuning } from './db/defaults.ts';
import { EVENTS_DEFAULTS, type EventsTuning } from './events/defaults.ts';
import { HTTP_DEFAULTS, type HttpTuning } from './http/defaults.ts';
import { OPS_DEFAULTS, type OpsTuning } from './ops/defaults.ts';
import { OUTBOX_DEFAULTS, type OutboxTuning } from './outbox/defaults.ts';
import { PUSH_DEFAULTS, type PushTuning } from './push/defaults.ts';
import { REALTIME_DEFAULTS, type RealtimeTuning } from './realtime/defaults.ts';

/**
 * The kernel's fixed values as one object: each kernel part declares its own in its defaults.ts
 * (the one place a default number of that part is written); this only gathers them, so buildApp and
 * the service take one `tuning` and a test shortens any of them by name (`buildApp(config, { tuning })`,
 * or test/support/service-entry.ts for a child process). An operator has no way to change these.
 */
export type KernelTuning = HttpTuning & DbTuning & EventsTuning & RealtimeTuning & OutboxTuning & PushTuning & OpsTuning;

export const KERNEL_TUNING: Readonly<KernelTuning> = Object.freeze({
  ...HTTP_DEFAULTS,
  ...DB_DEFAULTS,
  ...EVENTS_DEFAULTS,
  ...REALTIME_DEFAULTS,
  ...OUTBOX_DEFAULTS,
  ...PUSH_DEFAULTS,
  ...OPS_DEFAULTS,
});
