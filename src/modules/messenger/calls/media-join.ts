import { createHmac } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Clock } from '../../../platform/time.ts';
import type { MessengerContext } from '../context.ts';

/**
 * MediaJoinModel (ADR-0062): what a client needs to enter a media room — a short-lived signed
 * AccessToken for that room and that user, and time-limited TURN/ICE credentials. Minted per
 * recipient when a push is delivered or a REST call answers; never written to the database, so a
 * leaked realtime_outbox row (it only holds the RoomName's session id) opens no room.
 */
export interface MediaJoinModel {
  RoomName: string;
  AccessToken: string;
  ExpiresAt: string;
  IceServers: { Urls: string[]; Username: string; Credential: string }[];
}

export interface MediaJoinSettings {
  tokenSecret: string;
  tokenTtlSeconds: number;
  turnUrls: string[];
  turnSecret: string;
  turnTtlSeconds: number;
}

export interface MediaJoinRequest {
  userId: string;
  sessionId: string;
  roomName: string;
}

export type MediaJoinMinter = (req: MediaJoinRequest) => Promise<MediaJoinModel>;

/** What the calls part takes beside the shared context: the join minter of its answers. */
export interface CallsContext extends MessengerContext {
  mintJoin: MediaJoinMinter;
}

/** Audience of the room tokens; the media server checks it with the shared key. */
export const MEDIA_TOKEN_AUDIENCE = 'pin-media';

/**
 * TURN REST API credentials (the scheme coturn's `use-auth-secret` checks): the username carries
 * its expiry, the password is HMAC-SHA1(secret, username) — nothing to store or revoke.
 */
export function turnCredentials(userId: string, expiresAtSeconds: number, secret: string): { Username: string; Credential: string } {
  const username = `${expiresAtSeconds}:${userId}`;
  return { Username: username, Credential: createHmac('sha1', secret).update(username).digest('base64') };
}

export function createMediaJoinMinter(settings: MediaJoinSettings, clock: Clock): MediaJoinMinter {
  const key = new TextEncoder().encode(settings.tokenSecret);
  return async ({ userId, sessionId, roomName }) => {
    const nowSeconds = Math.floor(clock.now().getTime() / 1000);
    const exp = nowSeconds + settings.tokenTtlSeconds;
    const accessToken = await new SignJWT({ room: roomName, sid: sessionId })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(userId)
      .setAudience(MEDIA_TOKEN_AUDIENCE)
      .setIssuedAt(nowSeconds)
      .setExpirationTime(exp)
      .sign(key);
    return {
      RoomName: roomName,
      AccessToken: accessToken,
      ExpiresAt: new Date(exp * 1000).toISOString(),
      IceServers: [{ Urls: settings.turnUrls, ...turnCredentials(userId, nowSeconds + settings.turnTtlSeconds, settings.turnSecret) }],
    };
  };
}

