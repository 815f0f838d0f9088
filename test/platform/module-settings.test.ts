import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from '@sinclair/typebox';
import { buildTestApp } from '../support/app.ts';
import { defineModule } from '../../src/platform/module.ts';
import { userActivitySettings } from '../../src/modules/user-activity/settings.ts';

/** Each module gets only its part of the settings: the fields its settings.ts declares, with the loaded values. */
test('a module is handed the values of the settings it declares, and no other', async () => {
  let seen: Record<string, unknown> | undefined;
  const probe = defineModule({ USER_ACTIVITY_RETENTION_MONTHS: userActivitySettings.USER_ACTIVITY_RETENTION_MONTHS, NOT_A_SETTING: Type.String() }, ({ settings }) => {
    seen = settings;
    return { name: 'probe' };
  });
  const { app } = await buildTestApp({ USER_ACTIVITY_RETENTION_MONTHS: '7' }, { modules: [probe] });
  await app.ready();
  // NOT_A_SETTING is in no part's settings: the loaded config has no value for it, so it is absent.
  assert.deepEqual(seen, { USER_ACTIVITY_RETENTION_MONTHS: 7 });
});
