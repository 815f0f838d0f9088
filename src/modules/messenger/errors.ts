import { AppError } from '../../platform/http/errors.ts';

/** The messenger context's stable error codes for its user replica and contact search (REST `{ code, message }`). */
export const MessengerErrors = {
  /** Unknown or inactive user (contact.md INV-CT-6): the replica may not have it yet — a tolerated race. */
  contactUserNotFound: () => new AppError('MSG_CONTACT_USER_NOT_FOUND', 'no active user with this phone number', 404),
  invalidPhone: () =>
    new AppError('MSG_CONTACT_SEARCH_INVALID_PHONE', 'phone is not a valid phone number (use +<country code><number>)', 400),
  searchUnavailable: () =>
    new AppError('MSG_CONTACT_SEARCH_UNAVAILABLE', 'contact search is unavailable right now, try again shortly', 503),
};
