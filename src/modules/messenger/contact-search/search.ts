import type { ContactSearchIndex } from './port.ts';
import { SearchUnavailableError } from './port.ts';
import { MessengerErrors } from '../errors.ts';
import { maskLastName, toE164 } from '../user-replica/rules.ts';

/**
 * Global contact search by phone (seed 002 "Provides", INV-MU-3): finds an active user by a phone
 * typed in any usual format, through the search index. The last name stays masked ("И***") until
 * the viewer's contact with that user is Accepted. A user who blocked the viewer is not found, as an
 * unknown phone is: the blocked are never told (blacklist.md), and a search that still found the
 * blocker would tell them where a request or a call is refused.
 */

/** The viewer's relation to a user: their contact's status ('Accepted', 'Pending', …, null: none), and whether that user blocks the viewer. */
export type ContactRelationLookup = (viewerUserId: string, targetUserId: string) => Promise<{ status: string | null; blocksViewer: boolean }>;

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
  contactRelation: ContactRelationLookup;
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
  const relation = doc.userId === viewerUserId ? { status: 'Accepted', blocksViewer: false } : await deps.contactRelation(viewerUserId, doc.userId);
  if (relation.blocksViewer) throw MessengerErrors.contactUserNotFound();
  const visible = relation.status === 'Accepted';
  return {
    userId: doc.userId,
    firstName: doc.firstName,
    middleName: doc.middleName,
    lastName: visible ? doc.lastName : maskLastName(doc.lastName),
    lastNameMasked: !visible,
    phoneNumber,
  };
}
