import type { Rest } from './rest.ts';

/**
 * The REST calls about other people and this device: contacts, blocking, and the device's push
 * token (the notifications module). Each resolves with the service's answer or rejects with a
 * MessengerError carrying its code.
 */

export interface Contact {
  /** The contact's id: what acceptContact and removeContact take. */
  id: string;
  /** The other party. */
  userId: string;
  status: 'Pending' | 'Accepted';
  /** Outgoing: this user asked; Incoming: the other one did (accept it with acceptContact). */
  direction: 'Outgoing' | 'Incoming';
  createdAt: string;
  acceptedAt: string | null;
}

export interface BlockedUser {
  id: string;
  blockedUserId: string;
  status: 'Blocked' | 'Unblocked';
  updatedAt: string;
}

export type PushPlatform = 'android' | 'ios' | 'web';

const userPath = (userId: string) => `/api/messenger/blacklist/${encodeURIComponent(userId)}`;

export class PeopleApi {
  protected readonly rest: Rest;

  constructor(rest: Rest) {
    this.rest = rest;
  }

  /** Accepted contacts and pending requests, both directions. */
  async contacts(): Promise<Contact[]> {
    return (await this.rest.json<{ items: Contact[] }>('GET', '/api/messenger/contacts')).items;
  }

  /** Asks the user with this phone (any usual notation) to become a contact; they get contact_request_received. */
  async requestContact(phone: string): Promise<Contact> {
    return this.rest.json<Contact>('POST', '/api/messenger/contacts/requests', { phone });
  }

  /** Accepts an incoming request (only its addressee may: MSG_CONTACT_NOT_ADDRESSEE). */
  async acceptContact(contactId: string): Promise<Contact> {
    return this.rest.json<Contact>('POST', `/api/messenger/contacts/${encodeURIComponent(contactId)}/accept`);
  }

  /** Removes a contact, declines an incoming request or withdraws an outgoing one. */
  async removeContact(contactId: string): Promise<void> {
    await this.rest.json<void>('DELETE', `/api/messenger/contacts/${encodeURIComponent(contactId)}`);
  }

  /** The users this user blocked (entries once unblocked stay, as Unblocked). */
  async blockedUsers(): Promise<BlockedUser[]> {
    return (await this.rest.json<{ items: BlockedUser[] }>('GET', '/api/messenger/blacklist')).items;
  }

  /** Blocks a user: they cannot message this user in a Direct chat or call them, and are never told. Blocking twice changes nothing. */
  async blockUser(userId: string): Promise<BlockedUser> {
    return this.rest.json<BlockedUser>('PUT', userPath(userId));
  }

  async unblockUser(userId: string): Promise<BlockedUser> {
    return this.rest.json<BlockedUser>('DELETE', userPath(userId));
  }

  /**
   * Registers this device's push token (FCM, APNs or Web Push) for the signed-in user; registering
   * it again changes nothing. 409 NTF_PUSH_TOKEN_TAKEN while another user holds it
   * (the one signed in before on this device has to remove it), NTF_PUSH_TOKEN_LIMIT past the per-user cap.
   */
  async registerPushToken(token: string, platform: PushPlatform): Promise<void> {
    await this.rest.json<void>('POST', '/api/notifications/push-tokens', { token, platform });
  }

  /** Removes this device's push token (at sign-out), so the next user of the device gets none of these notifications. */
  async unregisterPushToken(token: string): Promise<void> {
    await this.rest.json<void>('DELETE', '/api/notifications/push-tokens', { token });
  }
}
