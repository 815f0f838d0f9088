import type { ModuleFactory } from '../platform/module.ts';
import userActivity from './user-activity/index.ts';
import identity from './identity/index.ts';
import notifications from './notifications/index.ts';
import messenger from './messenger/index.ts';

/**
 * Every bounded context the app hosts. Each entry is the default export of
 * `src/modules/<context>/index.ts` — the module's only public surface.
 * (user-activity, identity, messenger and notifications arrive with their issues.)
 */
export const modules: ModuleFactory[] = [userActivity, identity, notifications, messenger];
