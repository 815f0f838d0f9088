/** Value sets of contacts and blacklist entries (varchar columns, check constraints keep them honest). */

export const CONTACT_STATUSES = ['Pending', 'Accepted', 'Removed'] as const;
export type ContactStatus = (typeof CONTACT_STATUSES)[number];
export const BLACKLIST_STATUSES = ['Blocked', 'Unblocked'] as const;
export type BlacklistStatus = (typeof BLACKLIST_STATUSES)[number];
