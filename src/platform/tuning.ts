/**
 * Fixed values of the kernel that only a developer tunes (once settings; an operator has no reason to
 * change them, and every extra setting is one more a deployment can get wrong). The service always
 * runs these; a test that needs a short one builds the app in code with `buildApp(config, { tuning })`.
 */
export const KERNEL_TUNING = {
  /** A client must have sent its whole request (headers and body) within this; otherwise 408 and the connection closes. */
  httpRequestTimeoutMs: 30_000,
  /** A connection on which nothing is read or written for this long is closed (hub sockets ping well within it). */
  httpConnectionTimeoutMs: 120_000,
  /** SignalR ping (type 6): sent to a hub socket the server has not written to for this long. */
  hubPingIntervalMs: 15_000,
  /** A backplane or presence command Redis has not answered by then fails (a hung connection must not hang a push). */
  redisCommandTimeoutMs: 2000,
};

export type KernelTuning = typeof KERNEL_TUNING;
