import { SECOND_MS } from '../time.ts';
import { defineDefaults } from '../types/index.ts';

/** The shared Redis client's defaults (each user's command timeout is its own: realtime's, http's). */
export const REDIS_DEFAULTS = defineDefaults({
  /** A QUIT unanswered by then is given up on (the connection is dropped): a stop must not hang on a dead Redis. */
  redisQuitTimeoutMs: 1 * SECOND_MS,
});
