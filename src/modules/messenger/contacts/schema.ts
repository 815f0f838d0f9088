import { sql } from 'drizzle-orm';
import { check, index, uniqueIndex, uuid, varchar } from 'drizzle-orm/pg-core';
import { BLACKLIST_STATUSES, CONTACT_STATUSES } from '../model/contact-kinds.ts';
import { messengerSchema, oneOf, timestamptz as ts } from '../schema.ts';

/** Contacts and the blacklist (seed 000; drizzle part messenger.realtime). */

/** Contact (contact.md): one row per pair of users, whichever asked first. */
export const contacts = messengerSchema.table(
  'contacts',
  {
    id: uuid('id').primaryKey(),
    requesterUserId: uuid('requester_user_id').notNull(),
    addresseeUserId: uuid('addressee_user_id').notNull(),
    status: varchar('status', { length: 10 }).notNull(),
    removedByUserId: uuid('removed_by_user_id'),
    createdAt: ts('created_at').notNull(),
    acceptedAt: ts('accepted_at'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('ux_contacts_pair').on(sql`least(${t.requesterUserId}, ${t.addresseeUserId})`, sql`greatest(${t.requesterUserId}, ${t.addresseeUserId})`),
    index('ix_contacts_addressee').on(t.addresseeUserId),
    index('ix_contacts_requester').on(t.requesterUserId),
    check('ck_contacts_status', oneOf(t.status, CONTACT_STATUSES)),
    check('ck_contacts_not_self', sql`${t.requesterUserId} <> ${t.addresseeUserId}`),
  ],
);

/** Blacklist (blacklist.md): the owner blocked the user; unblocking keeps the row as Unblocked. */
export const blacklistEntries = messengerSchema.table(
  'blacklist_entries',
  {
    id: uuid('id').primaryKey(),
    ownerUserId: uuid('owner_user_id').notNull(),
    blockedUserId: uuid('blocked_user_id').notNull(),
    status: varchar('status', { length: 10 }).notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('ux_blacklist_owner_blocked').on(t.ownerUserId, t.blockedUserId),
    // Who blocks a user (chat views hide a blocker's read position: docs/security.md, "Consent").
    index('ix_blacklist_blocked').on(t.blockedUserId),
    check('ck_blacklist_status', oneOf(t.status, BLACKLIST_STATUSES)),
    check('ck_blacklist_not_self', sql`${t.ownerUserId} <> ${t.blockedUserId}`),
  ],
);
