import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FILES_SWEEP_JOB } from '../../../../src/modules/messenger/files/sweep.job.ts';
import { chatWithMember, filesApp, objectKeyOf, PDF, PNG, put, requestUpload, store, uploaded } from './support.ts';

/**
 * The files sweep deletes, bytes and row, every upload no message named within
 * FILES_UNSENT_EXPIRY (confirmed or not), and leaves sent files and younger uploads alone.
 */
test('the sweep deletes unsent uploads past FILES_UNSENT_EXPIRY from the store and the table; sent files and younger uploads stay', async () => {
  const m = await filesApp({ FILES_UNSENT_EXPIRY: '2h' });
  const { owner, chatId, base } = await chatWithMember(m);
  const confirmed = await uploaded(m, owner.token, chatId, PDF, { fileName: 'a.pdf', contentType: 'application/pdf' });
  const unconfirmed = await requestUpload(m, owner.token, chatId, { fileName: 'b.png', contentType: 'image/png', size: PNG.length });
  assert.equal((await put(unconfirmed, PNG)).status, 200);
  const sent = await uploaded(m, owner.token, chatId, PNG, { fileName: 'c.png', contentType: 'image/png' });
  assert.equal((await m.call(owner.token, 'POST', `${base}/messages`, { kind: 'File', fileId: sent.fileId })).status, 201);
  m.clock.advance(2 * 3_600_000 + 1000);
  const young = await uploaded(m, owner.token, chatId, PDF, { fileName: 'd.pdf', contentType: 'application/pdf' });
  const keys = Object.fromEntries(
    await Promise.all(Object.entries({ confirmed, unconfirmed, sent, young }).map(async ([k, f]) => [k, (await objectKeyOf(m, f.fileId))!] as const)),
  );
  for (const key of Object.values(keys)) assert.notEqual(await store.size(key), undefined);

  const run = await m.app.platform.runner.runNow(FILES_SWEEP_JOB);
  assert.equal(run.outcome, 'success', JSON.stringify(run));
  assert.equal(run.counts.deleted, 2);
  assert.equal(await store.size(keys.confirmed!), undefined);
  assert.equal(await store.size(keys.unconfirmed!), undefined);
  assert.equal(await store.size(keys.sent!), PNG.length);
  assert.equal(await store.size(keys.young!), PDF.length);
  const { rows } = await m.pool.query<{ id: string }>('select id from messenger.files order by created_at');
  assert.deepEqual(rows.map((r) => r.id).sort(), [sent.fileId, young.fileId].sort());
  // The swept file is gone for its uploader too.
  const again = await m.call<{ code: string }>(owner.token, 'POST', `${base}/messages`, { kind: 'File', fileId: confirmed.fileId });
  assert.deepEqual([again.status, again.body.code], [404, 'MSG_FILE_NOT_FOUND']);
});
