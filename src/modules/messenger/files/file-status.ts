/**
 * A file's life: `Pending` (an upload URL handed out) → confirmed as `Ready`, or as `Quarantined`
 * when FILES_QUARANTINE holds files for a scanner, which releases (`Ready`) or rejects it
 * (`Rejected`, bytes deleted). `Expired`: the sweep is deleting it (never sent in time).
 * `Deleted`: every message that named it was deleted (messages.ts, in the delete's transaction);
 * the sweep is deleting its bytes and row. Only a `Ready` file can be sent or downloaded.
 */
export const FILE_STATUSES = ['Pending', 'Quarantined', 'Ready', 'Rejected', 'Expired', 'Deleted'] as const;
export type FileStatus = (typeof FILE_STATUSES)[number];
/** The statuses a file's view can show: a Deleted file is answered 404, as any unknown file. */
export const VIEWED_FILE_STATUSES = FILE_STATUSES.filter((s): s is Exclude<FileStatus, 'Deleted'> => s !== 'Deleted');
