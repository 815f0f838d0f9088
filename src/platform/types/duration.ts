/**
 * Durations in settings are written one way, as duration strings (`500ms`, `30s`, `5m`, `24h`,
 * `7d`, or a sum such as `1h30m`, as Centrifugo v6 does), and reach the code as milliseconds. A bare
 * number is refused (except 0): an old `_MS` value pasted into a new name would otherwise be read in
 * the wrong unit.
 */
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const PART = /(\d+)(ms|s|m|h|d)/y;

/** Milliseconds of a duration string, or undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  const s = text.trim();
  if (s === '0') return 0;
  if (s === '') return undefined;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < s.length) {
    const at = PART.lastIndex;
    const m = PART.exec(s);
    if (!m || m.index !== at) return undefined;
    total += Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  }
  return Number.isSafeInteger(total) ? total : undefined;
}

/** The shortest exact duration string of `ms` in one unit (`90000` → `90s`, `86400000` → `1d`). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}
