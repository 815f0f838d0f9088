import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The device secret: the credential of an unauthenticated tracking session. `startSession` hands
 * one out (32 random bytes, base64url) to whoever creates a device's session; only its SHA-256
 * digest is stored (`sessions.device_secret_hash`, hex), so a database dump proves nothing. Every
 * later call that changes the session or its views must present it (header `X-Device-Secret`).
 * A digest of a 32-byte random value needs no salt or slow hash: there is nothing to guess.
 */

export const DEVICE_SECRET_HEADER = 'x-device-secret';

export interface DeviceSecret {
  secret: string;
  hash: string;
}

export const hashDeviceSecret = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex');

export function newDeviceSecret(): DeviceSecret {
  const secret = randomBytes(32).toString('base64url');
  return { secret, hash: hashDeviceSecret(secret) };
}

/**
 * Whether `presented` is the secret whose digest is `storedHash`, compared in constant time. A
 * session without a stored digest (started before device secrets existed) matches nothing.
 */
export function deviceSecretMatches(storedHash: string | null, presented: string): boolean {
  if (storedHash === null) return false;
  const expected = Buffer.from(storedHash, 'hex');
  const given = createHash('sha256').update(presented, 'utf8').digest();
  return expected.length === given.length && timingSafeEqual(expected, given);
}
