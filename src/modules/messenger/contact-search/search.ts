import type { ContactSearchIndex } from './port.ts';
import { SearchUnavailableError } from './port.ts';
import { MessengerErrors } from '../errors.ts';
import { maskLastName, toE164 } from '../user-replica/rules.ts';

/**
 * Global contact search by phone (seed 002 "Provides", INV-MU-3): finds an active user by a phone
 * typed in any usual format, through the search index. The last name stays masked ("И***") until
 * the viewer's contact with that user is Accepted.
 */

/** Status of the viewer's contact with a user ('Accepted', 'Pending', …) or null when there is none. */
export type ContactStatusLookup = (viewerUserId: string, targetUserId: string) => Promise<string | null>;

export interface ContactSearchResult {
  userId: string;
  firstName: string;
  middleName: string | null;
  lastName: string;
  lastNameMasked: boolean;
  phoneNumber: string;
}

export interface ContactSearchDeps {
  index: ContactSearchIndex;
  phoneRegion: string;
  contactStatus: ContactStatusLookup;
}

export async function searchContactByPhone(deps: ContactSearchDeps, viewerUserId: string, phoneInput: string): Promise<ContactSearchResult> {
  const phoneNumber = toE164(phoneInput.trim(), deps.phoneRegion);
  if (!phoneNumber) throw MessengerErrors.invalidPhone();
  let doc;
  try {
    doc = await deps.index.findActiveByPhone(phoneNumber);
  } catch (err) {
    if (err instanceof SearchUnavailableError) throw MessengerErrors.searchUnavailable();
    throw err;
  }
  if (!doc || !doc.isActive || doc.phoneNumber !== phoneNumber) throw MessengerErrors.contactUserNotFound();
  const visible = doc.userId === viewerUserId || (await deps.contactStatus(viewerUserId, doc.userId)) === 'Accepted';
  return {
    userId: doc.userId,
    firstName: doc.firstName,
    middleName: doc.middleName,
    lastName: visible ? doc.lastName : maskLastName(doc.lastName),
    lastNameMasked: !visible,
    phoneNumber,
  };
}
