import { isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';

/**
 * The client's address for storing (an `inet` column), or null. With TRUST_PROXY set, `req.ip` is
 * what the trusted proxy put in X-Forwarded-For, which need not be an address at all ("unknown",
 * a hostname, garbage from the client passed along); PostgreSQL would refuse it with a 500.
 */
export function clientAddress(req: FastifyRequest): string | null {
  return isIP(req.ip) === 0 ? null : req.ip;
}
