/** The one way the kernel talks to Redis (the hub's backplane and presence, shared rate limits): clients with bounded commands and a clean close. */
export { closeRedisClient, createRedisClient, waitUntilReady } from './client.ts';
