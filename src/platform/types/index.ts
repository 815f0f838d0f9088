import { Type, type Static, type TObject, type TProperties, type TSchema } from '@sinclair/typebox';

/**
 * TypeBox primitives every module's routes, settings and event payloads share, so a UUID or a
 * timestamp is checked the same way by Fastify (Ajv) and by TypeBox's Value (consumers).
 */

/** A UUID (any version), as a pattern: Value.Check knows no `format: 'uuid'`. */
export const Uuid = Type.String({
  pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
  maxLength: 36,
});

/** An ISO-8601 date-time with an offset (`2026-12-01T09:30:00Z`). */
export const Timestamp = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?(Z|[+-]\\d{2}:\\d{2})$',
  maxLength: 40,
});

/** `T` or null. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/**
 * Settings. Each is one TypeBox field — the one source of its default, bounds and unit (say the
 * unit in the name: `_MS`, `_SECONDS`, `_HOURS`) — read from the environment by config.ts.
 */
export const Int = (opts: { default: number; minimum?: number; maximum?: number; description: string }) => Type.Integer(opts);

export const Bool = (def: boolean, description: string) => Type.Boolean({ default: def, description });

export type { Static };

/** The values of a settings record (`{ NAME: TypeBox field }`), as loadConfig hands them over. */
export type SettingsOf<P extends TProperties> = Static<TObject<P>>;
