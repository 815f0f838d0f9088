import type { ModuleFactory } from '../platform/module.ts';
import { userActivityModule, type UserActivityTuning } from './user-activity/index.ts';
import identity from './identity/index.ts';
import { notificationsModule, type NotificationsTuning } from './notifications/index.ts';
import { messengerModule, type MessengerTuning } from './messenger/index.ts';

/** Fixed values of the modules that have them; a test shortens one (the service runs the defaults). */
export interface ModuleTuning {
  userActivity?: Partial<UserActivityTuning>;
  notifications?: Partial<NotificationsTuning>;
  messenger?: Partial<MessengerTuning>;
}

/**
 * Every bounded context the app hosts, built with `tuning` over each module's fixed values. Each
 * entry comes from `src/modules/<context>/index.ts` — the module's only public surface.
 */
export function tunedModules(tuning: ModuleTuning = {}): ModuleFactory[] {
  return [userActivityModule(tuning.userActivity), identity, notificationsModule(tuning.notifications), messengerModule(tuning.messenger)];
}

export const modules: ModuleFactory[] = tunedModules();
