import type { Db } from '../../platform/db/index.ts';
import { AppError } from '../../platform/http/index.ts';
import { API_ERRORS, PROVIDERS_OF, type BackoffKind, type Channel } from './model.ts';
import type { RetryPolicy } from './delivery/rules.ts';
import type { ChannelConfigRow } from './schema.ts';
import { selectChannelConfigs, upsertChannelConfig, wakeDispatcher, type ChannelConfigValues } from './sql.ts';
import { NOTIFICATIONS_DEFAULTS } from './defaults.ts';

export type ChannelConfigs = Map<Channel, ChannelConfigRow>;

/** Every channel's config (a handful of rows), read once per batch. */
export async function loadChannelConfigs(db: Db): Promise<ChannelConfigs> {
  const rows = await selectChannelConfigs(db);
  return new Map(rows.map((r) => [r.channel as Channel, r]));
}

/** A channel without a config row never sends (claims join the table); this only guards the rules. */
const FALLBACK: RetryPolicy = { maxAttempts: 1, backoff: { kind: 'Fixed', initialSeconds: 60, maxSeconds: 60, multiplier: 1 } };

export function channelPolicy(configs: ChannelConfigs, channel: Channel): RetryPolicy {
  const c = configs.get(channel);
  if (!c) return FALLBACK;
  return {
    maxAttempts: c.maxAttempts,
    backoff: {
      kind: c.retryBackoff as BackoffKind,
      initialSeconds: c.backoffInitialSeconds,
      maxSeconds: c.backoffMaxSeconds,
      multiplier: c.backoffMultiplier,
    },
  };
}

/** RetryBackoff as REST shows and takes it. */
export type RetryBackoffInput =
  | { kind: 'Fixed'; delaySeconds: number }
  | { kind: 'Exponential'; initialDelaySeconds: number; maxDelaySeconds: number; multiplier?: number };

export interface ChannelConfigInput {
  isEnabled: boolean;
  providerKey: string;
  maxAttempts: number;
  retryBackoff: RetryBackoffInput;
}

export interface ChannelConfigView extends ChannelConfigInput {
  channel: Channel;
  version: number;
  updatedAt: string;
}

export function channelConfigView(c: ChannelConfigRow): ChannelConfigView {
  return {
    channel: c.channel as Channel,
    isEnabled: c.isEnabled,
    providerKey: c.providerKey,
    maxAttempts: c.maxAttempts,
    retryBackoff:
      c.retryBackoff === 'Fixed'
        ? { kind: 'Fixed', delaySeconds: c.backoffInitialSeconds }
        : {
            kind: 'Exponential',
            initialDelaySeconds: c.backoffInitialSeconds,
            maxDelaySeconds: c.backoffMaxSeconds,
            multiplier: c.backoffMultiplier,
          },
    version: c.version,
    updatedAt: c.updatedAt.toISOString(),
  };
}

/** Cross-field checks the body schema cannot express; throws the seed-style API error. */
export function channelConfigProblems(channel: Channel, input: ChannelConfigInput): AppError | null {
  if (!PROVIDERS_OF[channel].includes(input.providerKey)) {
    return new AppError(API_ERRORS.invalidProvider, `provider '${input.providerKey}' cannot serve channel ${channel} (allowed: ${PROVIDERS_OF[channel].join(', ')})`, 400);
  }
  const b = input.retryBackoff;
  if (b.kind === 'Exponential' && b.maxDelaySeconds < b.initialDelaySeconds) {
    return new AppError(API_ERRORS.invalidBackoff, 'maxDelaySeconds must be at least initialDelaySeconds', 400);
  }
  return null;
}

/**
 * Creates or replaces a channel's config and wakes the dispatcher, so notifications that waited for
 * the channel go out at once (their Failed retries follow on the retry worker's next cycle).
 */
export async function putChannelConfig(db: Db, channel: Channel, input: ChannelConfigInput, now: Date): Promise<ChannelConfigRow> {
  const problem = channelConfigProblems(channel, input);
  if (problem) throw problem;
  const b = input.retryBackoff;
  const values: ChannelConfigValues = {
    isEnabled: input.isEnabled,
    providerKey: input.providerKey,
    maxAttempts: input.maxAttempts,
    retryBackoff: b.kind,
    backoffInitialSeconds: b.kind === 'Fixed' ? b.delaySeconds : b.initialDelaySeconds,
    backoffMaxSeconds: b.kind === 'Fixed' ? b.delaySeconds : b.maxDelaySeconds,
    backoffMultiplier: b.kind === 'Fixed' ? 1 : (b.multiplier ?? NOTIFICATIONS_DEFAULTS.exponentialMultiplier),
    updatedAt: now,
  };
  return db.transaction(async (tx) => {
    const row = await upsertChannelConfig(tx, channel, values);
    await wakeDispatcher(tx);
    return row;
  });
}
