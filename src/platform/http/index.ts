/** HTTP's public surface for modules: the error type and body, the authenticated principal, token signing. */
export { AppError, ErrorBody } from './errors.ts';
export { signToken, type Principal } from './auth.ts';
export { authSettings, type AuthSettings } from './settings.ts';
