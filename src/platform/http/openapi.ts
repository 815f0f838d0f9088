import type { FastifyInstance } from 'fastify';
import { bearerGuardOf } from './route-guard.ts';

/**
 * What the published OpenAPI document says of authentication, so generated clients and Swagger UI's
 * "Authorize" send the right credential: the security schemes, and each operation's requirement.
 * A route states its own `security` when it takes another credential (the media server's secret, a
 * device secret, a signed webhook); otherwise it is derived from the route's guard — `requireUser`
 * or `requireAdmin` → the bearer token, none → a public route (`security: []`).
 */
export const SECURITY_SCHEMES = {
  bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
  mediaCallback: { type: 'http', scheme: 'bearer', description: 'MESSENGER_MEDIA_CALLBACK_SECRET (the media server only)' },
  deviceSecret: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Device-Secret',
    description: 'The device secret a tracking session start returned: it proves the device that started the session',
  },
  providerSignature: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Signature',
    description: "The provider's HMAC-SHA256 of the timestamp and the raw body (with X-Signature-Timestamp), under the provider's webhook secret",
  },
} as const;

/** Server-relative: the document is served by the service it describes, at whatever address it is reached. */
export const SERVERS = [{ url: '/', description: 'this service (the address the document was fetched from)' }];

/** Fills in each documented route's security requirement from its guard (see above). */
export function deriveOperationSecurity(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = route.schema as { hide?: boolean; security?: unknown } | undefined;
    if (!schema || schema.hide || schema.security !== undefined) return;
    schema.security = bearerGuardOf(app, route) ? [{ bearer: [] }] : [];
  });
}
