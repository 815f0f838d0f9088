import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'puppeteer-core';
import { newId } from '../../../src/platform/time.ts';
import { launchChromium } from '../../modules/messenger/support/browser.ts';
import { insertReplicaUser, messengerApp } from '../../modules/messenger/support/app.ts';
import { insertChat, insertOutbox, uid } from '../../modules/messenger/support/dispatch.ts';
import { click, openConsole, text } from './console-page.ts';

/**
 * The console on a phone, from the keyboard and in the dark, in headless Chromium: readable at
 * 390 and 683 px (no sideways scroll), every table with header cells, every control labelled, dark
 * colours when the system asks for them; the backlogs' sparklines; the audit's actors by name and
 * its pages. OPS_CONSOLE_SCREENSHOTS=<dir> saves the phone-width overview there.
 */

const SHOTS = process.env.OPS_CONSOLE_SCREENSHOTS;
// Samples every 200 ms: the sparklines have points within the test.
const m = await messengerApp({}, {}, { opsOverviewFloorMs: 300, opsAlertSampleMs: 200 });
const origin = new URL(m.url).origin;
const operatorId = newId();
const operator = await m.token({ userId: operatorId, admin: true });

/** Nothing wider than the window (no sideways scroll), every table's columns headed, every control labelled. */
async function readable(page: Page, where: string): Promise<void> {
  const [scrollWidth, innerWidth] = (await page.evaluate('[document.documentElement.scrollWidth, window.innerWidth]')) as [number, number];
  assert.ok(scrollWidth <= innerWidth, `${where}: ${scrollWidth} px wide in a ${innerWidth} px window`);
  assert.ok(innerWidth <= 683, `${where}: laid out for the device's width (viewport meta), not ${innerWidth} px`);
  const unheaded = await page.$$eval('#view table', (ts) => ts.filter((t) => !t.querySelector('tr th[scope=col]')).length);
  assert.equal(unheaded, 0, `${where}: every table has a header row`);
  const unlabelled = await page.evaluate(`[...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
    .filter((e) => e.labels.length === 0 && !e.getAttribute('aria-label')).map((e) => e.id || e.outerHTML.slice(0, 60))`);
  assert.deepEqual(unlabelled, [], `${where}: every control labelled`);
}

test('in Chromium at 390 and 683 px: the overview, failures, a row, the audit and a runbook read without sideways scrolling; headers and labels everywhere', { timeout: 180_000 }, async () => {
  const browser = await launchChromium();
  const problems: string[] = [];
  await m.pool.query(`delete from push.realtime_outbox`);
  const chatId = await insertChat(m.pool, [uid()]);
  const rowId = await insertOutbox(m.pool, { kind: 'MessageReceived', chatId, messageId: newId(), status: 'Quarantined', attempts: 8 });
  await m.pool.query(`update push.realtime_outbox set last_error = $2 where id = $1`, [rowId, `RTO_BACKPLANE_DOWN: Error: ${'Connection is closed. '.repeat(12)}`]);
  for (const width of [390, 683]) {
    const page = await openConsole(browser, origin, operator, problems, { width });
    // The sign-in form's token box is labelled too (checked signed out).
    await readable(page, `overview at ${width}`);
    if (SHOTS && width === 390) await page.screenshot({ path: `${SHOTS}/ops-console-phone.png`, fullPage: false });
    for (const hash of ['#failures', '#failures/realtime-quarantined', `#failures/realtime-quarantined/${rowId}`, '#audit', '#runbook/MessengerRealtimeQuarantined', '#jobs/messenger-realtime-dispatch']) {
      await page.goto(`${origin}/ops${hash}`);
      await page.waitForFunction(`document.querySelector('#updated').dataset.refreshes && document.querySelector('#view').children.length > 0`);
      await readable(page, `${hash} at ${width}`);
    }
    await click(page, '#sign-out');
    await readable(page, `sign-in at ${width}`);
  }
  assert.deepEqual(problems, []);
});

test('in Chromium: dark colours when the system prefers them; the backlog sparkline draws the samples kept', { timeout: 120_000 }, async () => {
  const browser = await launchChromium();
  const problems: string[] = [];
  const light = await openConsole(browser, origin, operator, problems);
  const dark = await openConsole(browser, origin, operator, problems, { dark: true });
  const colours = (page: Page) => page.evaluate('[getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color]');
  assert.deepEqual(await colours(light), ['rgb(246, 247, 249)', 'rgb(29, 35, 48)']);
  assert.deepEqual(await colours(dark), ['rgb(20, 23, 29)', 'rgb(227, 230, 236)']);

  // A backlog that grows: its sparkline gains points and ends higher than it starts.
  await m.pool.query(`delete from push.realtime_outbox`);
  const chatId = await insertChat(m.pool, [uid()]);
  const spark = 'tr[data-metric="messenger_realtime_pending"] svg.spark';
  await light.waitForSelector(spark);
  for (let i = 0; i < 3; i++) {
    await insertOutbox(m.pool, { kind: 'MessageReceived', chatId, messageId: newId(), nextAttemptAt: new Date(Date.now() + 3_600_000) });
    await new Promise((r) => setTimeout(r, 700));
  }
  await light.waitForFunction(`/to 3, peak 3$/.test(document.querySelector('${spark}').getAttribute('aria-label'))`);
  assert.ok(Number(await light.$eval(spark, (s) => s.getAttribute('data-points'))) >= 3);
  assert.match((await light.$eval(spark, (s) => s.querySelector('polyline')!.getAttribute('points'))) ?? '', /^[\d.]+,[\d.]+( [\d.]+,[\d.]+)+$/);
  if (SHOTS) await dark.screenshot({ path: `${SHOTS}/ops-console-dark.png`, fullPage: false });
  assert.deepEqual(problems, []);
});

test('in Chromium: the audit names its actors where the replica of identity knows them, the id beside, and pages older entries', { timeout: 120_000 }, async () => {
  const browser = await launchChromium();
  const problems: string[] = [];
  await insertReplicaUser(m.pool, { id: operatorId });
  const stranger = newId();
  // 60 older entries (by the app's clock) by someone the replica does not know, then one of the operator's (newest).
  await m.pool.query(`delete from platform.ops_audit`);
  await m.pool.query(
    `insert into platform.ops_audit (id, at, actor, role, action, target, filter, dry_run, changed, status)
     select gen_random_uuid(), $2::timestamptz - make_interval(mins => g), $1, 'operator', 'run', 'job:x', '{}', false, 1, 'done' from generate_series(1, 60) g`,
    [stranger, m.clock.now()],
  );
  assert.equal((await m.call(operator, 'POST', '/api/ops/jobs/messenger-realtime-dispatch/run')).status, 200);
  const page = await openConsole(browser, origin, operator, problems);
  await page.goto(`${origin}/ops#audit`);
  await page.waitForSelector('#audit-rows tr[data-action]');
  assert.equal(await text(page, '#audit-rows tr[data-action] td.actor .actor-name'), 'Иван Петров');
  assert.equal(await text(page, '#audit-rows tr[data-action] td.actor small'), operatorId);
  const count = () => page.$$eval('#audit-rows tr[data-action]', (trs) => trs.length);
  assert.equal(await count(), 50);
  await click(page, '#audit-next');
  await page.waitForFunction(`document.querySelectorAll('#audit-rows tr[data-action]').length === 11`);
  assert.equal(await text(page, '#audit-rows tr[data-action] td.actor'), stranger, 'unknown to the replica: the id');
  // The older page's link reopens it.
  await page.reload();
  await page.waitForFunction(`document.querySelectorAll('#audit-rows tr[data-action]').length === 11`);
  await click(page, '#audit-first');
  await page.waitForFunction(`document.querySelectorAll('#audit-rows tr[data-action]').length === 50`);
  assert.deepEqual(problems, []);
});
