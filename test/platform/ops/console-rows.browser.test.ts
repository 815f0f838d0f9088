import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../src/platform/time.ts';
import { launchChromium } from '../../modules/messenger/support/browser.ts';
import { messengerApp } from '../../modules/messenger/support/app.ts';
import { insertChat, insertOutbox, uid } from '../../modules/messenger/support/dispatch.ts';
import { waitFor } from '../../support/wait.ts';
import { click, openConsole, text } from './console-page.ts';

/**
 * Rows you can open, in headless Chromium as on-call works a backlog of failed rows: a quarantined
 * row says why (its cause code, written by the dispatcher: here the backplane, a Redis nobody
 * listens on, was down); a row's detail and its own action; rows ticked for the bulk panel; pages;
 * links to a row and to a job that reopen the same view on reload.
 */

const JOB = 'messenger-realtime-dispatch';
// The backplane points at a port where no Redis runs: every push fails while it is "down".
const m = await messengerApp(
  { REALTIME_BACKPLANE_ENABLED: 'true', REDIS_URL: 'redis://127.0.0.1:1', MESSENGER_REALTIME_MAX_ATTEMPTS: '1' },
  {},
  { opsOverviewFloorMs: 300, opsBulkChunk: 10, opsBulkPauseMs: 20 },
);
const origin = new URL(m.url).origin;
const operator = await m.token({ userId: newId(), admin: true });
const status = async (id: string) => (await m.pool.query<{ status: string }>(`select status from push.realtime_outbox where id = $1`, [id])).rows[0]?.status ?? 'gone';

async function quarantined(n: number): Promise<string[]> {
  const chatId = await insertChat(m.pool, [uid()]);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await insertOutbox(m.pool, { kind: 'MessageReceived', chatId, messageId: newId(), status: 'Quarantined', attempts: 8 }));
  await m.pool.query(`update push.realtime_outbox set last_error = 'RTO_PUSH_TIMEOUT: Error: realtime push timed out after 5000 ms' where id = any($1::uuid[])`, [ids]);
  return ids.sort();
}

test('in Chromium: a row quarantined while the backplane is down says so; its detail, its link reopened on reload, and its own action', { timeout: 120_000 }, async () => {
  const browser = await launchChromium();
  const problems: string[] = [];
  await m.pool.query(`delete from push.realtime_outbox`);
  const [alice, bob] = [await m.user(), await m.user()];
  const chat = await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] });
  assert.equal(chat.status, 201);
  await m.dispatch();
  const { rows } = await m.pool.query<{ id: string; last_error: string }>(`select id, last_error from push.realtime_outbox where status = 'Quarantined'`);
  assert.ok(rows.length > 0, 'the push failed on its only attempt');
  assert.match(rows[0]!.last_error, /^RTO_BACKPLANE_DOWN: /);
  const id = rows[0]!.id;

  const page = await openConsole(browser, origin, operator, problems);
  await page.goto(`${origin}/ops#failures/realtime-quarantined`);
  await page.waitForSelector(`#failure-rows tr[data-id="${id}"]`);
  assert.equal(await text(page, `#failure-rows tr[data-id="${id}"] td.code`), 'RTO_BACKPLANE_DOWN');

  // Open it: every field, the attempts, the whole error, the runbook; the link reopens it on reload.
  // From the keyboard, as the rest of this row's work: Enter on the focused id opens it.
  await page.focus(`#failure-rows tr[data-id="${id}"] a.open-row`);
  await page.keyboard.press('Enter');
  await page.waitForSelector(`#failure-detail[data-id="${id}"]`);
  assert.equal(page.url(), `${origin}/ops#failures/realtime-quarantined/${id}`);
  await page.reload();
  await page.waitForSelector(`#failure-detail[data-id="${id}"]`);
  assert.equal(await text(page, '#row-fields dd[data-field="error code"]'), 'RTO_BACKPLANE_DOWN');
  assert.equal(await text(page, '#row-fields dd[data-field="attempts"]'), '1');
  assert.match(await text(page, '#row-fields dd[data-field="lastError"]'), /^RTO_BACKPLANE_DOWN: \w*Error/);
  assert.ok(await page.$('#row-links a.runbook[href="#runbook/MessengerRealtimeQuarantined"]'));
  assert.ok(await page.$(`#row-links a[href="#jobs/${JOB}"]`), 'the worker job that takes it up, linked');

  // Its own action asks first (Enter), the confirmation is the next stop of Tab, then discards that row alone.
  await page.focus('#row-act button[data-act="row-discard"]');
  await page.keyboard.press('Enter');
  assert.match(await text(page, '#row-act .row-answer'), new RegExp(`^discard ${id}\\? `));
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate('document.activeElement.dataset.act'), 'row-confirm');
  await page.keyboard.press('Enter');
  await page.waitForFunction(`document.querySelector('#row-gone')?.textContent.startsWith('discard: done')`);
  assert.equal(await status(id), 'gone');
  // Gone now: its link says so instead of showing a stale row.
  await page.reload();
  await page.waitForFunction(`!document.querySelector('#error').hidden`);
  assert.match(await text(page, '#error'), /^OPS_FAILURE_ROW_NOT_FOUND: /);
  assert.deepEqual(problems.filter((p) => !/404/.test(p)), []);
});

test('in Chromium: rows ticked replace the filter in the bulk panel (only they are requeued); a row\'s own button; pages that reload as themselves', { timeout: 120_000 }, async () => {
  const browser = await launchChromium();
  const problems: string[] = [];
  await m.pool.query(`delete from push.realtime_outbox`);
  const ids = await quarantined(5);
  const page = await openConsole(browser, origin, operator, problems);

  // Two rows a page: the first two, a link to the next page, which reloads as itself.
  await page.goto(`${origin}/ops#failures/realtime-quarantined?limit=2`);
  await page.waitForFunction(`document.querySelectorAll('#failure-rows tr[data-id]').length === 2`);
  const shown = () => page.$$eval('#failure-rows tr[data-id]', (trs) => trs.map((tr) => (tr as unknown as { dataset: { id: string } }).dataset.id));
  assert.deepEqual(await shown(), ids.slice(0, 2));
  assert.equal(await text(page, '#pager'), 'rows 2 shown of 5 next page »');
  await click(page, '#page-next');
  await page.waitForFunction(`document.querySelector('#failure-rows tr[data-id]')?.dataset.id === '${ids[2]}'`);
  await page.reload();
  await page.waitForSelector(`#failure-rows tr[data-id="${ids[2]}"]`);
  assert.deepEqual(await shown(), ids.slice(2, 4));
  await click(page, '#page-first');
  await page.waitForSelector(`#failure-rows tr[data-id="${ids[0]}"]`);

  // Tick two rows: the panel acts on those, not the filter; the dry run and the run say so.
  await click(page, `#failure-rows tr[data-id="${ids[0]}"] input.pick`);
  await click(page, `#failure-rows tr[data-id="${ids[1]}"] input.pick`);
  assert.equal(await text(page, '#bulk-filter'), 'Acts on the 2 rows ticked below (not the filter)');
  await click(page, 'button[data-act="dry-run"]');
  await page.waitForSelector('#dry-run-result');
  assert.equal(await text(page, '#dry-run-result'), '2 of 2 rows would change (requeue)');
  await click(page, 'button[data-act="bulk-run"]');
  assert.equal(await text(page, '#bulk-confirm-text'), 'Requeue 2 rows of realtime-quarantined (the 2 rows ticked below)?');
  await click(page, 'button[data-act="bulk-confirm"]');
  await page.waitForSelector('#bulk-progress[data-status="done"]');
  await waitFor('the ticked rows requeued', async () => (await status(ids[0]!)) === 'Pending' && (await status(ids[1]!)) === 'Pending');
  assert.deepEqual(await Promise.all(ids.slice(2).map(status)), ['Quarantined', 'Quarantined', 'Quarantined'], 'the rows not ticked stay');
  await page.waitForFunction(`document.querySelector('#failures-title').textContent.endsWith(': 3')`);

  // A row's own button in the list: asks, then acts on that row alone; the list refreshes.
  const row = `#failure-rows tr[data-id="${ids[2]}"]`;
  await click(page, `${row} button[data-act="row-discard"]`);
  await click(page, `${row} button[data-act="row-confirm"]`);
  await waitFor('the row discarded', async () => (await status(ids[2]!)) === 'gone');
  await page.waitForFunction(`!document.querySelector('#failure-rows tr[data-id="${ids[2]}"]')`);
  assert.deepEqual(problems, []);
});

test('in Chromium: a job\'s link opens its page (state, lock, runs, alerts watching it, actions) and reopens it on reload', { timeout: 120_000 }, async () => {
  const browser = await launchChromium();
  const problems: string[] = [];
  const page = await openConsole(browser, origin, operator, problems);
  assert.equal((await m.app.platform.runner.runNow(JOB)).outcome, 'success');
  await click(page, `tr[data-job="${JOB}"] a.job-link`);
  await page.waitForSelector(`#job-detail[data-job="${JOB}"]`);
  assert.equal(page.url(), `${origin}/ops#jobs/${JOB}`);
  await page.reload();
  await page.waitForSelector(`#job-detail[data-job="${JOB}"] #job-runs tr[data-key]`);
  assert.match(await text(page, '#job-fields dd[data-field="lock"]'), /^released/);
  assert.match(await text(page, '#job-runs tr[data-key] td'), /^success$/);
  await click(page, '#job-detail button[data-act="run"]');
  await page.waitForFunction(`document.querySelector('#job-answer').textContent.startsWith('${JOB}: ')`);
  assert.deepEqual(problems, []);
});
