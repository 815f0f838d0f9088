/**
 * What the ops console's failures pages and bulk actions need from a part that owns failed rows:
 * the kernel's push part (Quarantined realtime rows) and modules (terminal notifications, failed
 * fan-out tasks) each register a FailureSource (ModuleParts.opsFailures); the console knows no table.
 */

export type FailureAction = 'retry' | 'requeue' | 'discard' | 'replay';

/** Every field narrows; none = every failed row of the kind. `field`/`value` match one of the source's fields exactly. */
export interface FailureFilter {
  /** Failed at or after. */
  from?: Date;
  /** Failed before (half-open range). */
  to?: Date;
  /** The row's error code (or the start of its error text, where the source stores text). */
  errorCode?: string;
  field?: string;
  value?: string;
  /** Only these rows (a row's detail, the rows a person ticked): at most 100 ids. */
  ids?: string[];
}

/** Where a page of the list ends: the last row's `at` and id (rows come in (at, id) order). */
export interface FailureCursor {
  at: Date;
  id: string;
}

export interface FailureRow {
  id: string;
  /** When it failed (or was last touched), ISO-8601. */
  at: string;
  errorCode: string | null;
  /** The W3C trace id of the work that failed, when the row stores one. */
  traceId: string | null;
  /** The row's filterable fields and a few more, as shown in the console. */
  fields: Record<string, string | number | null>;
}

export interface FailureSource {
  /** URL segment: `realtime-quarantined`, `notifications-terminal`, … */
  kind: string;
  title: string;
  /** The alert whose runbook covers these rows (docs/runbooks/<alert>.md). */
  alert: string;
  /** Fields the filter's `field` may name (each compared for equality). */
  fields: readonly string[];
  /**
   * The job that takes a row up again once retried or requeued (due now): the console says when it
   * runs next and offers to run it now. Absent where no job does (a replayed dead letter is read by
   * its consumer).
   */
  worker?: string;
  /** What an operator may do with them; each is idempotent per row (a row no longer failed is skipped). */
  actions: readonly FailureAction[];
  /**
   * Matching rows in (at, id) order — `at` to the millisecond, as FailureRow.at gives it — at most
   * `limit`, after `after` when given (the keyset of the console's pages: stable while rows come and go).
   */
  list(filter: FailureFilter, limit: number, after?: FailureCursor): Promise<FailureRow[]>;
  count(filter: FailureFilter): Promise<number>;
  /** Applies `action` to at most `limit` matching rows in one statement (oldest first); how many changed. */
  act(action: FailureAction, filter: FailureFilter, limit: number, actor: string): Promise<number>;
}

/** Display names of the users a module knows among `ids` (UUIDs); an id it does not know is left out. */
export type ActorNames = (ids: readonly string[]) => Promise<Map<string, string>>;

/** A gauge the overview lists among the backlogs, by its metric name (summed per the labels it has). */
export interface BacklogMetric {
  metric: string;
  title: string;
  /** The alert watching it (its runbook is linked). */
  alert?: string;
}
