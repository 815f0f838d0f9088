/**
 * A file's life: `Pending` (an upload URL handed out) → confirmed as `Ready`, or as `Quarantined`
 * when FILES_QUARANTINE holds files for a scanner, which releases (`Ready`) or rejects it
 * (`Rejected`, bytes deleted). `Expired`: the sweep is deleting it (never sent in time).
 * Only a `Ready` file can be sent or downloaded.
 */
export const FILE_STATUSES = ['Pending', 'Quarantined', 'Ready', 'Rejected', 'Expired'] as const;
export type FileStatus = (typeof FILE_STATUSES)[number];
