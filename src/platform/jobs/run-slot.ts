/**
 * The no-overlap rule of one job in one process, as data. A timer tick while a run is going is
 * dropped (the next tick comes anyway); a wake while a run is going is remembered as one "run again
 * right after", because the notification may announce rows the current run has already passed.
 * Any number of wakes during a run collapse into that one rerun, so a burst of NOTIFYs costs a
 * handful of runs, never one per notification.
 */
export type Trigger = 'tick' | 'wake' | 'manual';

export interface RunSlot {
  running: boolean;
  rerunRequested: boolean;
}

export type Admission = 'start' | 'drop' | 'rerun-after';

export function admit(slot: RunSlot, trigger: Trigger, stopping: boolean): Admission {
  if (stopping) return 'drop';
  if (!slot.running) return 'start';
  return trigger === 'wake' ? 'rerun-after' : 'drop';
}

/** After a run: start again when a wake came in meanwhile (and the runner is not stopping). */
export function shouldRerun(slot: RunSlot, stopping: boolean): boolean {
  return slot.rerunRequested && !stopping;
}
