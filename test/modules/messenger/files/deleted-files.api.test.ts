import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MESSENGER_DEFAULTS } from '../../../../src/modules/messenger/defaults.ts';
import { FILES_SWEEP_JOB } from '../../../../src/modules/messenger/files/sweep.job.ts';
import type { MessengerApp } from '../support/app.ts';
import { chatWithMember, filesApp, objectKeyOf, PDF, PNG, store, uploaded, type Err } from './support.ts';

/**
 * A deleted File message does not keep its file: once no live message names it, the delete's own
 * transaction marks it Deleted, downloads answer 404 at once, and the files sweep deletes its bytes
 * from the real object store (HEAD 404) and then its row. A file another live message names stays.
 * And a file only messages withheld from a member name is no file to them (the blocker of its sender).
 */

type User = Awaited<ReturnType<MessengerApp['user']>>;
const codeOf = (r: { status: number; body: Err }) => [r.status, r.body.code];
const statusOf = async (m: MessengerApp, fileId: string) =>
  (await m.pool.query<{ status: string }>('select status from messenger.files where id = $1', [fileId])).rows[0]?.status;
const sendFile = async (m: MessengerApp, u: User, base: string, fileId: string) => {
  const res = await m.call<{ id: string }>(u.token, 'POST', `${base}/messages`, { kind: 'File', fileId });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
};
const del = async (m: MessengerApp, u: User, base: string, messageId: string) =>
  assert.equal((await m.call(u.token, 'DELETE', `${base}/messages/${messageId}`)).status, 204);
/** Runs the sweep once past the grace a Deleted file waits (MESSENGER_DEFAULTS.filesDeletedGraceMs). */
const sweepPastGrace = async (m: MessengerApp) => {
  m.clock.advance(MESSENGER_DEFAULTS.filesDeletedGraceMs + 1000);
  const run = await m.app.platform.runner.runNow(FILES_SWEEP_JOB);
  assert.equal(run.outcome, 'success', JSON.stringify(run));
  return run;
};

describe('a deleted File message’s file', () => {
  test('is Deleted in the delete’s transaction, 404 to everyone at once, and the sweep deletes its bytes (HEAD 404 at the store) and then its row', async () => {
    const m = await filesApp();
    const { owner, member, chatId, base } = await chatWithMember(m);
    const file = await uploaded(m, owner.token, chatId, PDF, { fileName: 'plan.pdf', contentType: 'application/pdf' });
    const key = (await objectKeyOf(m, file.fileId))!;
    const messageId = await sendFile(m, owner, base, file.fileId);
    const url = `${base}/files/${file.fileId}/download`;
    assert.equal((await m.call(member.token, 'GET', url)).status, 200);

    await del(m, owner, base, messageId);
    // Committed with the delete: the sweep owns the bytes from here, whatever happens to this process.
    assert.equal(await statusOf(m, file.fileId), 'Deleted');
    for (const who of [owner, member]) assert.deepEqual(codeOf(await m.call<Err>(who.token, 'GET', url)), [404, 'MSG_FILE_NOT_FOUND']);
    const resend = await m.call<Err>(owner.token, 'POST', `${base}/messages`, { kind: 'File', fileId: file.fileId });
    assert.deepEqual(codeOf(resend), [404, 'MSG_FILE_NOT_FOUND'], 'a Deleted file cannot be sent again');

    // Within the grace a racing send may still write its message: the bytes wait.
    const early = await m.app.platform.runner.runNow(FILES_SWEEP_JOB);
    assert.equal(early.counts.deleted ?? 0, 0);
    assert.equal(await store.size(key), PDF.length);

    const run = await sweepPastGrace(m);
    assert.equal(run.counts.deleted, 1);
    assert.equal(await store.size(key), undefined, 'the object is gone from the store');
    assert.equal(await statusOf(m, file.fileId), undefined, 'and its row from the table');
  });

  test('an admin’s delete releases the file as the sender’s does', async () => {
    const m = await filesApp();
    const { owner, chatId, base } = await chatWithMember(m);
    const file = await uploaded(m, owner.token, chatId, PNG, { fileName: 'flat.png', contentType: 'image/png' });
    const messageId = await sendFile(m, owner, base, file.fileId);
    const someone = await m.user();
    assert.equal((await m.call(owner.token, 'POST', `${base}/participants`, { userIds: [someone.id] })).status, 200);
    const admin = { ...someone, token: await m.token({ userId: someone.id, admin: true }) };
    await del(m, admin, base, messageId);
    assert.equal(await statusOf(m, file.fileId), 'Deleted');
  });

  test('named by two messages, it survives the delete of one (downloadable, bytes kept) and goes with the second', async () => {
    const m = await filesApp();
    const { owner, member, chatId, base } = await chatWithMember(m);
    const file = await uploaded(m, owner.token, chatId, PNG, { fileName: 'flat.png', contentType: 'image/png' });
    const key = (await objectKeyOf(m, file.fileId))!;
    const first = await sendFile(m, owner, base, file.fileId);
    const second = await sendFile(m, owner, base, file.fileId);
    const url = `${base}/files/${file.fileId}/download`;

    await del(m, owner, base, first);
    assert.equal(await statusOf(m, file.fileId), 'Ready');
    await sweepPastGrace(m);
    assert.equal(await store.size(key), PNG.length);
    assert.equal((await m.call(member.token, 'GET', url)).status, 200);

    await del(m, owner, base, second);
    await sweepPastGrace(m);
    assert.equal(await store.size(key), undefined);
    assert.equal(await statusOf(m, file.fileId), undefined);
  });

  test('a Deleted file a live message names again when the sweep comes (a send that took it before the delete) is Ready again, bytes kept', async () => {
    const m = await filesApp();
    const { owner, member, chatId, base } = await chatWithMember(m);
    const file = await uploaded(m, owner.token, chatId, PNG, { fileName: 'flat.png', contentType: 'image/png' });
    const key = (await objectKeyOf(m, file.fileId))!;
    const first = await sendFile(m, owner, base, file.fileId);
    const second = await sendFile(m, owner, base, file.fileId);
    // What the race leaves: the delete of `first` saw no other live message (`second` not yet written) and marked the file.
    await del(m, owner, base, first);
    await m.pool.query(`update messenger.files set status = 'Deleted' where id = $1`, [file.fileId]);
    assert.ok(second);

    const run = await sweepPastGrace(m);
    assert.equal(run.counts.deleted ?? 0, 0);
    assert.equal(await statusOf(m, file.fileId), 'Ready');
    assert.equal(await store.size(key), PNG.length);
    assert.equal((await m.call(member.token, 'GET', `${base}/files/${file.fileId}/download`)).status, 200);
  });
});

describe('a file of a message withheld from a member', () => {
  test('is 404 to the blocker it is withheld from; its uploader still gets it', async () => {
    const m = await filesApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const chatId = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [bob.id] })).body.id;
    await m.accept(bob.token, chatId);
    const base = `/api/messenger/chats/${chatId}`;
    assert.equal((await m.call(alice.token, 'PUT', `/api/messenger/blacklist/${bob.id}`)).status, 200);

    const file = await uploaded(m, bob.token, chatId, PDF, { fileName: 'offer.pdf', contentType: 'application/pdf' });
    await sendFile(m, bob, base, file.fileId);
    const { rows } = await m.pool.query<{ withheld_from: string }>(`select withheld_from from messenger.messages where file_meta->>'fileId' = $1`, [file.fileId]);
    assert.deepEqual(rows.map((r) => r.withheld_from), [alice.id], 'the message is withheld from the blocker');

    const url = `${base}/files/${file.fileId}/download`;
    assert.deepEqual(codeOf(await m.call<Err>(alice.token, 'GET', url)), [404, 'MSG_FILE_NOT_FOUND']);
    assert.equal((await m.call(bob.token, 'GET', url)).status, 200);
    // An unblock reveals nothing: the message stays withheld, and so does its file.
    assert.equal((await m.call(alice.token, 'DELETE', `/api/messenger/blacklist/${bob.id}`)).status, 200);
    assert.deepEqual(codeOf(await m.call<Err>(alice.token, 'GET', url)), [404, 'MSG_FILE_NOT_FOUND']);
  });
});
