import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { AppError } from './errors.ts';
import { createTokenVerifier, extractToken, type Principal } from './auth.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
  interface FastifyInstance {
    /** preHandler: a valid user token is required (401 otherwise); sets request.principal. */
    requireUser: preHandlerAsyncHookHandler;
    /** preHandler: a valid token with `admin: true` is required (401 / 403). */
    requireAdmin: preHandlerAsyncHookHandler;
  }
}

export function registerAuth(app: FastifyInstance, secret: string): void {
  const tokens = createTokenVerifier(secret);
  const authenticate = async (req: FastifyRequest): Promise<Principal> => {
    const token = extractToken(req.headers);
    if (!token) throw new AppError('AUTH_REQUIRED', 'a bearer token is required', 401);
    try {
      req.principal = await tokens.verify(token);
    } catch (err) {
      throw new AppError('AUTH_INVALID_TOKEN', (err as Error).message, 401);
    }
    return req.principal;
  };
  app.decorateRequest('principal', undefined);
  app.decorate('requireUser', async (req: FastifyRequest) => {
    await authenticate(req);
  });
  app.decorate('requireAdmin', async (req: FastifyRequest) => {
    const principal = await authenticate(req);
    if (!principal.admin) throw new AppError('AUTH_FORBIDDEN', 'an admin token is required', 403);
  });
}
