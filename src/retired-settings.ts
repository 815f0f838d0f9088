import { formatDuration } from './platform/types/index.ts';

/**
 * Settings that were renamed or removed. Setting one fails start-up with a message naming what to do
 * instead: silently ignoring an old name would reset a value an operator tuned to its default.
 * Keep an entry for as long as a deployment might still carry the old name.
 */
export type RetiredSetting =
  /** Renamed; `unit` when the old one was a number in that unit and the new one is a duration string. */
  | { renamed: string; unit?: keyof typeof UNIT_MS }
  /** Removed: now a fixed constant beside the code that uses it (`value` as it is fixed, `why`). */
  | { constant: string; why: string };

const UNIT_MS = { ms: 1, s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export const RETIRED_SETTINGS: Record<string, RetiredSetting> = {
  SHUTDOWN_TIMEOUT_MS: { renamed: 'SHUTDOWN_TIMEOUT', unit: 'ms' },
};

/** The problem of each retired name set in `env` (empty counts as unset, as in loadConfig). */
export function retiredSettingProblems(
  env: Record<string, string | undefined>,
  retired: Record<string, RetiredSetting> = RETIRED_SETTINGS,
): string[] {
  const problems: string[] = [];
  for (const [name, entry] of Object.entries(retired)) {
    const value = env[name]?.trim();
    if (value === undefined || value === '') continue;
    if ('constant' in entry) {
      problems.push(`${name}: removed — it is now a fixed constant (${entry.constant}; ${entry.why}); unset it`);
    } else if (entry.unit === undefined) {
      problems.push(`${name}: renamed ${entry.renamed}; set that instead and unset ${name}`);
    } else {
      const n = Number(value);
      const suggestion = /^\d+$/.test(value) && Number.isSafeInteger(n * UNIT_MS[entry.unit])
        ? `${entry.renamed}=${formatDuration(n * UNIT_MS[entry.unit])}`
        : `${entry.renamed} as a duration such as 30s, 5m or 24h`;
      problems.push(`${name}: renamed ${entry.renamed}, a duration string: set ${suggestion} and unset ${name}`);
    }
  }
  return problems;
}
