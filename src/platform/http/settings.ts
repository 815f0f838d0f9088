import { Type } from '@sinclair/typebox';
import type { SettingsOf } from '../types/index.ts';

/** Token verification for REST and the hub. One TypeBox field per setting is its one source of default, bounds and unit (config.ts reads them from the environment). */
export const authSettings = {
  JWT_SECRET: Type.String({
    default: 'dev-only-secret-change-me-in-production-0123456789',
    minLength: 32,
    description: 'HS256 secret for REST and hub tokens (at least 32 characters)',
  }),
  // Here rather than in the messenger's settings: the auth plugin owns every credential check, and the
  // media server is a caller of its own kind (neither a user nor an admin).
  MESSENGER_MEDIA_CALLBACK_SECRET: Type.Optional(
    Type.String({
      minLength: 32,
      description:
        'Bearer secret the media server presents on its recording-outcome callback (compared in constant time); unset = the callback answers 401',
    }),
  ),

};

export type AuthSettings = SettingsOf<typeof authSettings>;
