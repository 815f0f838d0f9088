/**
 * A timestamp as clients get it (ISO-8601 UTC): `query` reads timestamptz columns as `Date`; a row
 * that comes inside JSON (`row_to_json`, the send statements' message) has them as text.
 */
export const isoOf = (v: Date | string | null): string | null => (v === null ? null : typeof v === 'string' ? new Date(v).toISOString() : v.toISOString());
