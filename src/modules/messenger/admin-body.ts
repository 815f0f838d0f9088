import type { FastifyRequest } from 'fastify';
import type { TObject } from '@sinclair/typebox';
import { AppError } from '../../platform/http/index.ts';

/**
 * preValidation for admin runbook bodies whose fields narrow what the call touches: an unknown
 * field is refused with `code`, not dropped (Fastify's validator strips properties the schema does
 * not name, so a mistyped filter would silently widen the call to everything). No body at all is
 * the empty body.
 */
export function refuseUnknownFields(schema: TObject, code: string) {
  const known = Object.keys(schema.properties);
  return async (req: FastifyRequest): Promise<void> => {
    if (req.body === undefined || req.body === null) {
      req.body = {};
      return;
    }
    if (typeof req.body !== 'object' || Array.isArray(req.body)) return; // the schema refuses it
    if (Object.keys(req.body).some((k) => !known.includes(k))) {
      throw new AppError(code, `unknown field; the fields are ${known.join(', ')}`, 400);
    }
  };
}
