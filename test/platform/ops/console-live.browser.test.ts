import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import type { Browser, Page } from 'puppeteer-core';
import { ACQUIRE_SQL } from '../../../src/platform/jobs/lease-sql.ts';
import { newId } from '../../../src/platform/time.ts';
import { launchChromium } from '../../modules/messenger/support/browser.ts';
import { messengerApp } from '../../modules/messenger/support/app.ts';
import { insertChat, insertOutbox, uid } from '../../modules/messenger/support/dispatch.ts';
import { click, openConsole as open, text } from './console-page.ts';

/**
 * The ops console's live overview in headless Chromium, read as on-call reads it during an
 * incident: updated in place (focus and selection kept), a status line, values in their unit, times
 * in UTC, and each job's lock and next run as they stand.
 */

const JOB = 'messenger-realtime-dispatch';
const m = await messengerApp({}, {}, { opsOverviewFloorMs: 300, opsBulkChunk: 1, opsBulkPauseMs: 50 });
const origin = new URL(m.url).origin;
const operatorId = newId();
const operator = await m.token({ userId: operatorId, admin: true });

const openConsole = (browser: Browser, token: string, problems: string[]): Promise<Page> => open(browser, origin, token, problems);

test('in Chromium: the live overview updates in place (focus and a text selection survive two refreshes), opens with a status line, and shows values and times for a person', { timeout: 120_000 }, async () => {
  const browser = await launchChromium();
  const problems: string[] = [];
  const page = await openConsole(browser, operator, problems);
  await m.pool.query(`delete from push.realtime_outbox`);
  const chatId = await insertChat(m.pool, [uid(), uid()]);
  await insertOutbox(m.pool, { kind: 'MessageReceived', chatId, messageId: newId(), status: 'Quarantined', attempts: 8 });

  // The status line: the worst alert, the dependencies, the backlogs not at zero (that row stands out).
  await page.waitForFunction(`document.querySelector('#status-backlogs')?.textContent.includes('Realtime outbox: quarantined rows: 1')`);
  assert.match(await text(page, '#status-alert'), /^Worst alert: firing (critical|warning) \w+: .+/);
  assert.equal(await text(page, '#status-deps'), 'No dependency down.');
  assert.ok(await page.$('tr.nonzero[data-metric="messenger_realtime_quarantined"]'));
  assert.equal(await page.$('tr.nonzero[data-metric="messenger_realtime_pending"]'), null);
  // Values in their unit, never a raw float; every time says UTC.
  const values = await page.$$eval('#alerts td.value, #backlogs td.value', (tds) => tds.map((td) => td.textContent ?? ''));
  assert.ok(values.length > 0);
  for (const v of values) assert.doesNotMatch(v, /\.\d{3,}/);
  assert.match(await text(page, 'tr[data-alert="MessengerRealtimeDispatchNotRunning"] td.value'), /^\d+ (d|h|min|s)\b/);
  assert.match(await text(page, '#updated'), /^updated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);

  // Focus a button and select a job's name; two live refreshes later both are as they were.
  const button = (await page.$(`tr[data-job="${JOB}"] button[data-act="run"]`))!;
  await button.focus();
  await page.evaluate(`(() => { const r = document.createRange(); r.selectNodeContents(document.querySelector('tr[data-job="${JOB}"] th a')); getSelection().removeAllRanges(); getSelection().addRange(r); })()`);
  const refreshes = () => page.$eval('#updated', (e) => Number((e as unknown as { dataset: { refreshes: string } }).dataset.refreshes));
  const before = await refreshes();
  await page.waitForFunction(`Number(document.querySelector('#updated').dataset.refreshes) >= ${before + 2}`);
  assert.equal(await page.evaluate((b) => (globalThis as unknown as { document: { activeElement: unknown } }).document.activeElement === b, button), true, 'focus kept');
  assert.equal(await page.evaluate('getSelection().toString()'), JOB, 'selection kept');
  assert.deepEqual(problems, []);
});

// Last in the file: it starts the job runner's timers at its end.
test('in Chromium: the lock column says held, expired or released in relative time, and each job its next run', { timeout: 120_000 }, async () => {
  const browser = await launchChromium();
  const problems: string[] = [];
  const page = await openConsole(browser, operator, problems);
  const lease = `tr[data-job="${JOB}"] td.lease`;
  const leaseIs = (state: string) => page.waitForFunction(`document.querySelector('${lease}')?.dataset.lease === '${state}'`);
  // A run that took milliseconds: its lease row still runs for minutes, the lock is released.
  assert.equal((await m.app.platform.runner.runNow(JOB)).outcome, 'success');
  await leaseIs('released');
  assert.match(await text(page, lease), /^released \(last taken by \S+ \d+ (ms|s) ago\)$/);

  // Another replica's run holds it; then that replica stops renewing (frozen).
  const key = (await m.call<{ jobs: { name: string; lockKey: string }[] }>(operator, 'GET', '/api/ops/jobs')).body.jobs.find((j) => j.name === JOB)!.lockKey;
  const session = new pg.Client({ connectionString: m.database.url });
  await session.connect();
  await session.query(ACQUIRE_SQL, [key, 'replica-b', 60_000]);
  await leaseIs('held');
  assert.match(await text(page, lease), /^held by replica-b, lease ends in (\d+ s|1 min)$/);
  await m.pool.query(`update platform.job_leases set expires_at = clock_timestamp() - interval '3 seconds' where name = $1`, [key]);
  await leaseIs('expired');
  assert.match(await text(page, lease), /^expired \d+ s ago: replica-b still holds the lock but stopped renewing/);
  await session.end();
  await leaseIs('released');

  // No timer runs in this test app until the runner starts; then each job shows its next run, in UTC.
  const next = `tr[data-job="${JOB}"] td.next-run`;
  assert.equal(await text(page, next), '— (no timer on this replica)');
  await m.app.platform.runner.start();
  await page.waitForFunction(`/^in \\d+ ms \\(.+ UTC\\)$|^in \\d+ s \\(.+ UTC\\)$/.test(document.querySelector('${next}')?.textContent ?? '')`);

  // A running replica exports the pause (job_paused): the not-running alert is held back, so it
  // does not page, and the overview lists it as held with the pause's reason.
  const pause = await m.call(operator, 'POST', `/api/ops/jobs/${JOB}/pause`, { reason: 'Redis failover drill', until: new Date(Date.now() + 30 * 60_000).toISOString() });
  assert.equal(pause.status, 200);
  const held = 'tr[data-alert="MessengerRealtimeDispatchNotRunning"][data-held="true"]';
  await page.waitForSelector(held);
  assert.equal(await text(page, `${held} td`), 'held back (planned pause)');
  assert.match(await text(page, `${held} td.pause-note`), new RegExp(`^planned pause of ${JOB} by .+: Redis failover drill; expected end `));
  assert.equal(await page.$('tr[data-alert="MessengerRealtimeDispatchNotRunning"]:not([data-held])'), null, 'not firing or pending');
  assert.equal((await m.call(operator, 'POST', `/api/ops/jobs/${JOB}/resume`)).status, 200);
  await page.waitForFunction(`!document.querySelector('${held}')`);
  assert.deepEqual(problems, []);
});
