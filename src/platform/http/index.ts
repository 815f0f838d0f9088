/** HTTP's public surface for modules: the error type and body, the authenticated principal, token signing, route limits. */
export { AppError, ErrorBody } from './errors.ts';
export { addErrorCodes, answer, errorCodes, named } from './openapi-components.ts';
export { signToken, type Principal } from './auth.ts';
export { authSettings, type AuthSettings } from './settings.ts';
export { perClientLimit, perUserLimit } from './rate-limit.ts';
export { clientAddress } from './client-address.ts';
export { addAfterBearerGuard, bearerGuardOf } from './route-guard.ts';
export { forbiddenKeyError, parseJsonBody } from './json-body.ts';
export type { AdminActionRecord, AdminAuditSink } from './admin-audit.ts';
