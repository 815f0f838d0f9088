import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildTestApp } from './support/app.ts';
import { logCapture } from './support/logs.ts';

/**
 * What a runbook says of running its job now (`POST /api/ops/jobs/{name}/run`) matches the job the
 * app registers: only a single-runner job's run can be skipped because another replica holds its
 * lock; a job every replica runs (no lock) is skipped only by this replica's own run still going,
 * a pause, or the replica stopping, which its runbook names instead.
 */

const RUNBOOKS = resolve(import.meta.dirname, '../docs/runbooks');
const { app } = await buildTestApp({}, { logDestination: logCapture().stream });
const singleRunner = new Map((await app.platform.runner.list()).map((j) => [j.name, j.singleRunner]));

/** Each runbook paragraph that runs a job now, with the job's name. */
const runNowParagraphs = readdirSync(RUNBOOKS)
  .filter((f) => f.endsWith('.md'))
  .flatMap((file) =>
    readFileSync(join(RUNBOOKS, file), 'utf8')
      .split(/\n\s*\n/)
      .flatMap((text) => [...text.matchAll(/\/api\/ops\/jobs\/([a-z0-9-]+)\/run/g)].map((m) => ({ file, job: m[1]!, text }))),
  );

test('runbooks that run a job now name a job the app registers', () => {
  assert.ok(runNowParagraphs.length > 0);
  for (const { file, job } of runNowParagraphs) assert.ok(singleRunner.has(job), `${file}: no job named ${job}`);
});

test("a runbook says `skipped` means another replica holds the lock only of a single-runner job; of any other job it names the run's skipReason", () => {
  for (const { file, job, text } of runNowParagraphs) {
    const claimsLock = /another replica holds|single-runner lock/.test(text);
    if (singleRunner.get(job)) continue;
    assert.ok(!claimsLock, `${file}: ${job} runs on every replica without a lock, yet its runbook blames one`);
    if (/`skipped`/.test(text)) assert.match(text, /already_running/, `${file}: says what a skipped run of ${job} means`);
  }
});
