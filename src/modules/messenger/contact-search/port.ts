/**
 * The contact search index port (seed 002 step 6, docs/architecture.md, "Dependencies"): Elasticsearch when
 * ELASTICSEARCH_URL is set, PostgreSQL otherwise. Both keep one MessengerContactSearchDocument
 * per replica row, written after the replica commits and never inside its transaction.
 */

/** MessengerContactSearchDocument: what contact search needs of a replica row. */
export interface MessengerContactSearchDocument {
  userId: string;
  firstName: string;
  middleName: string | null;
  lastName: string;
  /** E.164; null while the user has no phone of its own (another live row holds the one it asked for: INV-MU-2). */
  phoneNumber: string | null;
  isActive: boolean;
  /** The replica row's revision: a document never replaces one with a higher revision. */
  revision: number;
}

export interface IndexOutcome {
  /** Documents the index refused (the rest are stored, or already stored at a revision ≥ theirs). */
  failed: { userId: string; reason: string }[];
}

export interface ContactSearchIndex {
  readonly kind: 'elasticsearch' | 'postgres';
  /** Creates the index with its mapping if it is missing (idempotent). */
  prepare(): Promise<void>;
  /**
   * Upserts documents; one with a lower revision than the stored one is ignored (not a failure).
   * Throws when the index cannot be reached at all.
   */
  index(docs: readonly MessengerContactSearchDocument[]): Promise<IndexOutcome>;
  /** Deletes documents; unknown ids are ignored. */
  remove(userIds: readonly string[]): Promise<void>;
  /** The active user holding this E.164 phone, or null (inactive and unknown users are not found). */
  findActiveByPhone(phoneNumber: string): Promise<MessengerContactSearchDocument | null>;
  /** Ids of indexed documents after `after` in id order: lets the rebuild find orphans. */
  listUserIds(after: string | null, limit: number): Promise<string[]>;
  /** Makes everything written so far searchable (Elasticsearch refresh; no-op for PostgreSQL). */
  refresh(): Promise<void>;
  health(): Promise<'ok' | 'down'>;
  close(): Promise<void>;
}

/** The search index could not answer; routes turn it into a 503. */
export class SearchUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SearchUnavailableError';
  }
}
