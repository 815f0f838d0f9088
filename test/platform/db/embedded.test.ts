import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { startEmbeddedPostgres } from '../../../src/platform/db/embedded.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { freePort } from '../../support/service-process.ts';

/** The embedded server (npm start's default database, the test harness's) failing to start says why. */

test('an embedded PostgreSQL that exits while starting (its port taken) fails with an Error naming the port and the server\'s own reason', { timeout: 60_000 }, async () => {
  const port = await freePort();
  const log = createLogger('silent');
  const dirs = [`/tmp/pin-embedded-test-${port}-a`, `/tmp/pin-embedded-test-${port}-b`];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const first = await startEmbeddedPostgres({ dataDir: dirs[0]!, port, log });
  after(() => first.stop());

  const second = startEmbeddedPostgres({ dataDir: dirs[1]!, port, log });
  await assert.rejects(second, (err: unknown) => {
    assert.ok(err instanceof Error, `an Error, not ${String(err)}`);
    assert.match(err.message, new RegExp(`embedded PostgreSQL exited while starting \\(port ${port}`));
    assert.match(err.message, /already in use|lock file|could not bind|could not create/i, err.message);
    return true;
  });
});
