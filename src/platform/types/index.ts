import { Value } from '@sinclair/typebox/value';
import { formatDuration, parseDuration } from './duration.ts';
export { formatDuration, parseDuration } from './duration.ts';
export { phoneRegionSettings } from './phone-region.ts';
import { Type, type NumberOptions, type Static, type StringOptions, type TObject, type TProperties, type TSchema } from '@sinclair/typebox';

/**
 * TypeBox primitives every module's routes, settings and event payloads share, so a UUID or a
 * timestamp is checked the same way by Fastify (Ajv) and by TypeBox's Value (consumers).
 */

/**
 * The guard every accepted string's pattern starts with: no U+0000 anywhere (PostgreSQL text and
 * jsonb cannot hold it, so it would end in a 500). A lookahead, so it composes with any pattern.
 */
export const NO_NUL_GUARD = '^(?=[^\\u0000]*$)';

/**
 * A string a route (or event) accepts: bounded (`maxLength` is required) and refusing U+0000, with
 * `pattern`, when given, applied as well. Every string in a route schema is one of these (or a
 * literal); test/platform/http/route-schemas.test.ts walks the OpenAPI document to hold that.
 */
export const Text = (opts: StringOptions & { maxLength: number }) =>
  Type.String({ ...opts, pattern: `${NO_NUL_GUARD}(?:${opts.pattern ?? ''})` });

/**
 * An integer a route accepts: `maximum` is required, so an oversized value is a 400, not an
 * out-of-range error from PostgreSQL. `PG_INT_MAX` for int columns, `Number.MAX_SAFE_INTEGER` for
 * bigint ones (a JS number holds no more).
 */
export const BoundedInt = (opts: NumberOptions & { minimum: number; maximum: number }) => Type.Integer(opts);
export const PG_INT_MAX = 2_147_483_647;

/**
 * Why a free-form JSON value (a route's `Type.Unknown()` inside a record, stored as jsonb) cannot be
 * taken, or undefined: JSON Schema cannot bound its serialized size, and jsonb refuses U+0000 (a
 * 500), so the route checks both with this before anything is stored.
 */
export function jsonValueProblem(value: unknown, maxBytes: number): { tooLarge: boolean; message: string } | undefined {
  const text = JSON.stringify(value);
  if (Buffer.byteLength(text) > maxBytes) return { tooLarge: true, message: `is larger than ${maxBytes} bytes as JSON` };
  if (text.includes('\\u0000')) return { tooLarge: false, message: 'contains U+0000' };
  return undefined;
}

/** A UUID (any version), as a pattern: Value.Check knows no `format: 'uuid'`. */
export const Uuid = Text({
  pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
  maxLength: 36,
});

/** An ISO-8601 date-time with an offset (`2026-12-01T09:30:00Z`). */
export const Timestamp = Text({
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?(Z|[+-]\\d{2}:\\d{2})$',
  maxLength: 40,
});

/** `T` or null. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/**
 * Settings. Each is one TypeBox field — the one source of its default, bounds, unit and description —
 * read from the environment by config.ts; `.env.example` is generated from these fields
 * (`npm run env-example`). A duration is a `Duration` field: no unit in its name.
 */
export const Int = (opts: { default: number; minimum?: number; maximum?: number; description: string }) => Type.Integer(opts);

/** Marks a Duration field: loadConfig parses its string, messages show its bounds as durations. */
export const DURATION = 'x-duration';

/**
 * A duration setting, written as a duration string (`30s`, `5m`, `24h`; see duration.ts) in the
 * environment and in its default and bounds; the code receives milliseconds (an integer field, so
 * options built in code — tests, benches — give milliseconds and are bounds-checked the same way).
 */
export const Duration = (opts: { default: string | number; minimum?: string; maximum?: string; description: string }) =>
  Type.Integer({
    default: typeof opts.default === 'number' ? opts.default : durationMs(opts.default),
    ...(opts.minimum === undefined ? {} : { minimum: durationMs(opts.minimum) }),
    ...(opts.maximum === undefined ? {} : { maximum: durationMs(opts.maximum) }),
    description: opts.description,
    [DURATION]: true,
  });

function durationMs(text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined) throw new Error(`not a duration: ${text}`);
  return ms;
}

export const isDuration = (field: TSchema | undefined): boolean => field?.[DURATION] === true;

/**
 * One setting's problem as every message names it: `NAME: what is wrong (got value)`. A duration's
 * bounds and value are shown as durations, so the message reads in the unit the operator writes.
 */
export function settingProblem(name: string, field: TSchema | undefined, message: string, value: unknown, secret = false): string {
  if (isDuration(field) && Number.isInteger(value)) {
    const { minimum, maximum } = field as { minimum?: number; maximum?: number };
    const range =
      minimum !== undefined && maximum !== undefined
        ? `must be between ${formatDuration(minimum)} and ${formatDuration(maximum)}`
        : minimum !== undefined
          ? `must be at least ${formatDuration(minimum)}`
          : `must be at most ${formatDuration(maximum ?? 0)}`;
    return `${name}: ${range} (got ${formatDuration(value as number)})`;
  }
  const shown = value === undefined || secret ? '' : ` (got ${JSON.stringify(value)})`;
  return `${name}: ${message}${shown}`;
}

export const Bool = (def: boolean, description: string) => Type.Boolean({ default: def, description });

export type { Static };

/** The values of a settings record (`{ NAME: TypeBox field }`), as loadConfig hands them over. */
export type SettingsOf<P extends TProperties> = Static<TObject<P>>;

/** The defaults of a settings group, as loadConfig gives them when nothing is set. */
export const defaultsOf = <P extends TProperties>(fields: P): SettingsOf<P> => Value.Create(Type.Object(fields)) as SettingsOf<P>;

/**
 * Every value outside its field's bounds, each naming the setting as loadConfig does, followed by
 * the field's description (which names the seed's option). The TypeBox field stays the one source
 * of a setting's bounds, also for options built in code (tests, benches) rather than by loadConfig.
 */
export function settingsProblems<P extends TProperties>(fields: P, values: Partial<SettingsOf<P>>): string[] {
  // Only the fields given are checked (a caller may check a few), and keys that are no field pass.
  const given = Object.fromEntries(Object.keys(values).filter((k) => Object.hasOwn(fields, k)).map((k) => [k, fields[k]!]));
  return [...Value.Errors(Type.Object(given), values)].map((e) => {
    const name = e.path.slice(1) || '(settings)';
    return `${settingProblem(name, fields[name], e.message, e.value)} — ${fields[name]?.description ?? ''}`;
  });
}

/**
 * A part's defaults object (its defaults.ts): frozen, so no caller changes what another reads, with
 * its numbers typed as numbers (Object.freeze alone would type each as its literal, and a test's
 * shorter value would not fit).
 */
export const defineDefaults = <T extends object>(values: T): Readonly<T> => Object.freeze(values);
