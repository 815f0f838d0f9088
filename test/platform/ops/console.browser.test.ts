import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'puppeteer-core';
import { signToken } from '../../../src/platform/http/auth.ts';
import { newId } from '../../../src/platform/time.ts';
import { launchChromium } from '../../modules/messenger/support/browser.ts';
import { messengerApp } from '../../modules/messenger/support/app.ts';
import { insertChat, insertMessage, insertOutbox, uid } from '../../modules/messenger/support/dispatch.ts';
import { waitFor } from '../../support/wait.ts';
import { click, openConsole as open, text } from './console-page.ts';

/**
 * The ops console as an on-call engineer uses it, in headless Chromium against the running service:
 * signs in with a token, pauses the realtime dispatcher and watches its backlog grow, finds the
 * Quarantined rows with their runbook link, dry-runs a requeue (its count), requeues them and sees
 * them delivered once the dispatcher runs again, finds the audit entries; a read-only user sees
 * everything and can act on nothing. OPS_CONSOLE_SCREENSHOTS=<dir> saves the overview and the
 * failures page there (docs/ holds the ones in operations.md).
 */

const SHOTS = process.env.OPS_CONSOLE_SCREENSHOTS;
const JOB = 'messenger-realtime-dispatch';
// Samples every 250 ms: the backlog's sparkline in the overview screenshot has its points.
const m = await messengerApp({}, {}, { opsOverviewFloorMs: 300, opsBulkChunk: 1, opsBulkPauseMs: 50, opsAlertSampleMs: 250 });
const origin = new URL(m.url).origin;
const operatorId = newId();
const operator = await m.token({ userId: operatorId, admin: true });
const viewer = await signToken({ userId: newId(), admin: false, opsRole: 'viewer' }, m.config.JWT_SECRET, { issuer: m.config.AUTH_ISSUER, audience: m.config.AUTH_AUDIENCE });

const openConsole = (browser: Browser, token: string, problems: string[]): Promise<Page> => open(browser, origin, token, problems);
const statuses = async (ids: string[]) => (await m.pool.query<{ status: string }>(`select status from push.realtime_outbox where id = any($1::uuid[]) order by id`, [ids])).rows.map((r) => r.status);

test('in Chromium: pause, a growing backlog, a quarantined row and its runbook, dry run, bulk requeue that delivers, the audit; a viewer cannot act', { timeout: 240_000 }, async () => {
  const browser = await launchChromium();
  const problems: string[] = [];
  const page = await openConsole(browser, operator, problems);
  assert.match(await text(page, '#who'), /operator/);

  // Pause the dispatcher from the console: it asks why and until when; the backlog grows while it is paused.
  await click(page, `tr[data-job="${JOB}"] button[data-act="pause"]`);
  await page.waitForSelector('#pause-dialog[open]');
  await page.type('#pause-reason', 'Redis failover drill');
  await page.$eval('#pause-minutes', (i) => ((i as unknown as { value: string }).value = '45'));
  await page.click('#pause-confirm');
  await page.waitForSelector(`tr[data-job="${JOB}"] td.paused`);
  assert.match(await text(page, `tr[data-job="${JOB}"] td.paused`), /^paused by \S+ since .+ UTC: Redis failover drill; expected end in 4[45] min( \d+ s)? \(.+ UTC\)$/);
  // Its alert says the pause is planned, with the reason (the in-process evaluation's annotations).
  const alertRow = `tr[data-alert="MessengerRealtimeDispatchNotRunning"]`;
  await page.waitForSelector(`${alertRow}[data-paused="true"]`);
  assert.match(await text(page, `${alertRow} td.pause-note`), new RegExp(`^planned pause of ${JOB} by .+: Redis failover drill; expected end `));
  assert.match(await text(page, `${alertRow} td`), /\(planned pause\)$/);
  // Run now says what it did: skipped, because the job is paused.
  await click(page, `tr[data-job="${JOB}"] button[data-act="run"]`);
  await page.waitForFunction(`document.querySelector('#job-answer').textContent.includes('skipped')`);
  assert.equal(await text(page, '#job-answer'), `${JOB}: skipped: the job is paused: resume it first`);
  const alice = uid();
  const chatId = await insertChat(m.pool, [alice, uid()], { lastSeq: 3 });
  const rows: string[] = [];
  for (const seq of [1, 2, 3]) rows.push(await insertOutbox(m.pool, { kind: 'MessageReceived', chatId, seq, messageId: await insertMessage(m.pool, chatId, seq, alice) }));
  assert.equal((await m.app.platform.runner.runNow(JOB)).skipReason, 'paused');
  await page.waitForFunction(`document.querySelector('tr[data-metric="messenger_realtime_pending"] td.value')?.textContent === '3'`);
  if (SHOTS) await page.screenshot({ path: `${SHOTS}/ops-console-overview.png`, fullPage: true });

  // Two of them fail for good: the failures page lists them with the runbook of their alert.
  await m.pool.query(`update push.realtime_outbox set status = 'Quarantined', attempts = 8, last_error = 'PUSH_TIMEOUT: hub did not answer' where id = any($1::uuid[])`, [rows.slice(0, 2)]);
  await m.pool.query(`update push.realtime_outbox set status = 'Quarantined', attempts = 8, last_error = 'REF_NOT_FOUND: gone' where id = $1`, [rows[2]]);
  await page.goto(`${origin}/ops#failures/realtime-quarantined`);
  await page.waitForFunction(`document.querySelectorAll('#failure-rows tr[data-id]').length === 3`);
  // The runbook opens in the console, as HTML under the same CSP; Back returns to the rows.
  await click(page, '#failure-rows tr[data-id] a.runbook');
  await page.waitForSelector('#runbook-view article.runbook h1');
  assert.equal(await text(page, '#runbook-view h1'), 'MessengerRealtimeQuarantined');
  assert.ok((await page.$$('#runbook-view h2')).length >= 3, 'its sections as headings, not raw markdown');
  assert.equal(await page.$('#runbook-view script'), null);
  await page.goBack();
  await page.waitForFunction(`document.querySelectorAll('#failure-rows tr[data-id]').length === 3`);

  // Filter by error code, dry-run the requeue: its count, nothing changed.
  await page.type('#filters input[name=errorCode]', 'PUSH_TIMEOUT');
  await page.click('#filters button[type=submit]');
  await page.waitForFunction(`document.querySelectorAll('#failure-rows tr[data-id]').length === 2`);
  await click(page, 'button[data-act="dry-run"]');
  await page.waitForSelector('#dry-run-result');
  assert.equal(await text(page, '#dry-run-result'), '2 of 2 rows would change (requeue)');
  if (SHOTS) await page.screenshot({ path: `${SHOTS}/ops-console-failures.png`, fullPage: true });
  assert.deepEqual(await statuses(rows.slice(0, 2)), ['Quarantined', 'Quarantined']);

  // Run it: it asks first, with the count and the filter; progress to done, the count refreshed, and
  // what happens next (the dispatcher is paused); resume the dispatcher and run it now: delivered.
  await click(page, 'button[data-act="bulk-run"]');
  assert.equal(await text(page, '#bulk-confirm-text'), 'Requeue 2 rows of realtime-quarantined (errorCode=PUSH_TIMEOUT)?');
  await click(page, 'button[data-act="bulk-confirm"]');
  await page.waitForSelector('#bulk-progress[data-status="done"]');
  assert.match(await text(page, '#bulk-progress'), /requeue: 2 of 2 changed — done/);
  await page.waitForSelector('#bulk-next');
  assert.equal(await text(page, '#bulk-next'), `The rows are due now; ${JOB} is paused: resume it (Overview) to take them up.`);
  assert.match(await text(page, '#failures-title'), /: 0$/, 'the count under the applied filter, refreshed');
  await page.goto(`${origin}/ops#overview`);
  await click(page, `tr[data-job="${JOB}"] button[data-act="resume"]`);
  await page.waitForSelector(`tr[data-job="${JOB}"] button[data-act="pause"]`);
  await click(page, `tr[data-job="${JOB}"] button[data-act="run"]`);
  await page.waitForFunction(`document.querySelector('#job-answer').textContent.includes('success')`);
  assert.match(await text(page, '#job-answer'), new RegExp(`^${JOB}: success in \\d+ ms: .*claimed=2`));
  await waitFor('the requeued rows to be delivered', async () => (await statuses(rows.slice(0, 2))).every((s) => s === 'Done'));
  assert.deepEqual(await statuses([rows[2]!]), ['Quarantined'], 'the row the filter left out stays');

  // The audit page shows every action with who did it.
  await page.goto(`${origin}/ops#audit`);
  await page.waitForSelector('#audit-rows tr[data-action="requeue"]');
  const audit = await page.$$eval('#audit-rows tr[data-action]', (trs) => trs.map((tr) => [...tr.querySelectorAll('th, td')].map((td) => td.textContent)));
  const actions = audit.map((cells) => `${cells[3]} ${cells[6]} ${cells[8]}`);
  assert.deepEqual(actions.slice(0, 6), ['run no 1', 'resume no 1', 'requeue no 2', 'requeue yes 0', 'run no 0', 'pause no 1']);
  assert.ok(audit.every((cells) => cells[1] === operatorId));

  // A read-only user sees the same pages; every action is disabled, and refused if sent anyway.
  const ro = await openConsole(browser, viewer, problems);
  assert.match(await text(ro, '#who'), /read-only/);
  assert.equal(await ro.$eval(`tr[data-job="${JOB}"] button[data-act="pause"]`, (b) => (b as unknown as { disabled: boolean }).disabled), true);
  await ro.goto(`${origin}/ops#failures/realtime-quarantined`);
  await ro.waitForSelector('#failure-rows tr[data-id]');
  assert.equal(await ro.$eval('button[data-act="dry-run"]', (b) => (b as unknown as { disabled: boolean }).disabled), true);
  const refused = await ro.evaluate(async (job) => {
    const token = (globalThis as unknown as { sessionStorage: { getItem(k: string): string } }).sessionStorage.getItem('pin.ops.token');
    const res = await fetch(`/api/ops/jobs/${job}/pause`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    return [res.status, ((await res.json()) as { code: string }).code];
  }, JOB);
  assert.deepEqual(refused, [403, 'OPS_READ_ONLY']);
  // The page ran under its Content-Security-Policy without a violation or a script error.
  assert.deepEqual(problems.filter((p) => !/403/.test(p)), []);
});

test('in Chromium: a new filter that fails drops the previous bulk panel (no Run left acting on the old filter); the audit page shows runbook calls and refusals with their answer', { timeout: 240_000 }, async () => {
  const browser = await launchChromium();
  const problems: string[] = [];
  const page = await openConsole(browser, operator, problems);
  await m.pool.query(`delete from push.realtime_outbox`);
  const chatId = await insertChat(m.pool, [uid(), uid()]);
  for (let i = 0; i < 3; i++) await insertOutbox(m.pool, { kind: 'MessageReceived', chatId, messageId: newId(), status: 'Quarantined', attempts: 8 });

  // Every row, dry-run: Run is enabled for this (empty) filter.
  await page.goto(`${origin}/ops#failures/realtime-quarantined`);
  await page.waitForFunction(`document.querySelectorAll('#failure-rows tr[data-id]').length === 3`);
  await click(page, 'button[data-act="dry-run"]');
  await page.waitForSelector('#dry-run-result');
  assert.equal(await page.$eval('button[data-act="bulk-run"]', (b) => (b as unknown as { disabled: boolean }).disabled), false);

  // The form edited but not applied: the panel says so and runs nothing on either filter.
  await page.select('#filters select[name=field]', 'chatId');
  await page.waitForSelector('#bulk-stale:not([hidden])');
  assert.equal(await page.$eval('button[data-act="bulk-run"]', (b) => (b as unknown as { disabled: boolean }).disabled), true);
  assert.equal(await page.$eval('button[data-act="dry-run"]', (b) => (b as unknown as { disabled: boolean }).disabled), true);
  assert.equal(await text(page, '#bulk-filter'), 'Acts on the applied filter: no filter: every row of this kind');

  // A filter the API refuses: the error shows, and the old panel with its Run is gone.
  await page.type('#filters input[name=value]', 'not-a-uuid');
  await page.click('#filters button[type=submit]');
  await page.waitForFunction(`!document.querySelector('#error').hidden`);
  assert.match(await text(page, '#error'), /OPS_INVALID_FILTER/);
  assert.equal(await page.$('button[data-act="bulk-run"]'), null, 'no Run of the previous filter is left');
  assert.equal(await page.$('#failure-rows'), null, 'nor the previous filter\'s rows');
  assert.deepEqual(await statuses((await m.pool.query<{ id: string }>(`select id from push.realtime_outbox`)).rows.map((r) => r.id)), ['Quarantined', 'Quarantined', 'Quarantined']);

  // A runbook call outside the console and a viewer's refused action: both on the audit page, with their answers.
  assert.equal((await m.call(operator, 'POST', '/api/messenger/admin/realtime-outbox/requeue-quarantined', { dryRun: true })).status, 200);
  assert.equal((await m.call(viewer, 'POST', `/api/ops/jobs/${JOB}/run`)).status, 403);
  await page.goto(`${origin}/ops#audit`);
  await page.waitForSelector('#audit-rows tr[data-action="requeueQuarantinedRealtimeRows"]');
  const row = (sel: string) => page.$eval(sel, (tr) => [...tr.querySelectorAll('th, td')].map((td) => td.textContent));
  const runbook = await row('#audit-rows tr[data-action="requeueQuarantinedRealtimeRows"]');
  assert.deepEqual([runbook[1], runbook[6], runbook[9], runbook[10]], [operatorId, 'yes', 'done', '200']);
  const refused = await row('#audit-rows tr[data-status="refused"]');
  assert.deepEqual([refused[3], refused[9], refused[10]], ['runJob', 'refused', '403']);
  assert.match(refused[11] ?? '', /^OPS_READ_ONLY: /);
  assert.deepEqual(problems.filter((p) => !/400|403/.test(p)), []);
});

test('in Chromium: the bulk panel sits above the rows, takes a maximum, and after a requeue offers to run the worker now, which delivers and empties the list', { timeout: 120_000 }, async () => {
  const browser = await launchChromium();
  const problems: string[] = [];
  const page = await openConsole(browser, operator, problems);
  await m.pool.query(`delete from push.realtime_outbox`);
  const alice = uid();
  const chatId = await insertChat(m.pool, [alice, uid()], { lastSeq: 2 });
  const ids: string[] = [];
  for (const seq of [1, 2]) ids.push(await insertOutbox(m.pool, { kind: 'MessageReceived', chatId, seq, messageId: await insertMessage(m.pool, chatId, seq, alice), status: 'Quarantined', attempts: 8 }));
  await page.goto(`${origin}/ops#failures/realtime-quarantined`);
  await page.waitForFunction(`document.querySelectorAll('#failure-rows tr[data-id]').length === 2`);
  assert.equal(await page.evaluate(`Boolean(document.querySelector('#bulk').compareDocumentPosition(document.querySelector('#failure-rows')) & Node.DOCUMENT_POSITION_FOLLOWING)`), true, 'the panel comes before the rows');

  // At most one row: the dry run counts one; Run asks for one.
  await page.$eval('#bulk-max', (i) => ((i as unknown as { value: string }).value = '1'));
  await click(page, 'button[data-act="dry-run"]');
  await page.waitForSelector('#dry-run-result');
  assert.equal(await text(page, '#dry-run-result'), '1 of 2 rows would change (requeue)');
  await click(page, 'button[data-act="bulk-run"]');
  assert.equal(await text(page, '#bulk-confirm-text'), 'Requeue 1 row of realtime-quarantined (no filter: every row of this kind)?');
  await click(page, 'button[data-act="bulk-confirm"]');
  await page.waitForSelector('#bulk-next');
  assert.match(await text(page, '#bulk-next'), new RegExp(`^The rows are due now; ${JOB} (runs next at .+ UTC|has no timer on this replica) — run it now\\?`));
  assert.match(await text(page, '#failures-title'), /: 1$/);

  // Run the worker from there: the requeued row is delivered; the list shows what is left.
  await click(page, 'button[data-act="run-worker"]');
  await page.waitForFunction(`document.querySelector('#worker-answer')?.textContent.includes('success')`);
  await waitFor('one requeued row to be delivered', async () => (await statuses(ids)).filter((s) => s === 'Done').length === 1);
  await page.waitForFunction(`document.querySelectorAll('#failure-rows tr[data-id]').length === 1`);
  assert.deepEqual(problems, []);
});
