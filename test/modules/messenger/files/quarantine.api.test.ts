import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chatWithMember, filesApp, objectKeyOf, PDF, PNG, store, uploaded, type Download, type Err, type FileView } from './support.ts';

/**
 * The quarantine hook (FILES_QUARANTINE): a confirmed file is held until a scanner with an admin
 * token releases or rejects it; meanwhile it can be neither sent nor downloaded.
 */

type Listed = FileView & { download: Download };

describe('quarantine', () => {
  test('a confirmed file is Quarantined: no send, no download; the scanner lists it, reads its bytes and releases it, then it is sent and downloaded', async () => {
    const m = await filesApp({ FILES_QUARANTINE: 'true' });
    const { owner, member, chatId, base } = await chatWithMember(m);
    const scanner = await m.token({ admin: true });
    const file = await uploaded(m, owner.token, chatId, PDF, { fileName: 'lease.pdf', contentType: 'application/pdf' });
    assert.equal(file.status, 'Quarantined');
    const code = (res: { status: number; body: Err }) => [res.status, res.body.code];
    assert.deepEqual(code(await m.call<Err>(owner.token, 'POST', `${base}/messages`, { kind: 'File', fileId: file.fileId })), [409, 'MSG_FILE_QUARANTINED']);
    assert.deepEqual(code(await m.call<Err>(owner.token, 'GET', `${base}/files/${file.fileId}/download`)), [409, 'MSG_FILE_QUARANTINED']);
    // Only an admin token reaches the hook.
    assert.equal((await m.call(owner.token, 'GET', '/api/messenger/admin/files/quarantined')).status, 403);
    assert.equal((await m.call(owner.token, 'POST', `/api/messenger/admin/files/${file.fileId}/release`)).status, 403);

    const listed = await m.call<{ items: Listed[]; nextAfter: string | null }>(scanner, 'GET', '/api/messenger/admin/files/quarantined');
    assert.equal(listed.status, 200);
    const held = listed.body.items.find((f) => f.fileId === file.fileId)!;
    assert.deepEqual(Buffer.from(await (await fetch(held.download.url)).arrayBuffer()), PDF);

    const released = await m.call<FileView>(scanner, 'POST', `/api/messenger/admin/files/${file.fileId}/release`);
    assert.deepEqual([released.status, released.body.status], [200, 'Ready']);
    assert.deepEqual(code(await m.call<Err>(scanner, 'POST', `/api/messenger/admin/files/${file.fileId}/release`)), [409, 'MSG_FILE_NOT_QUARANTINED']);
    assert.equal((await m.call(owner.token, 'POST', `${base}/messages`, { kind: 'File', fileId: file.fileId })).status, 201);
    assert.equal((await m.call(member.token, 'GET', `${base}/files/${file.fileId}/download`)).status, 200);
    const after = await m.call<{ items: Listed[] }>(scanner, 'GET', '/api/messenger/admin/files/quarantined');
    assert.equal(after.body.items.some((f) => f.fileId === file.fileId), false);
  });

  test('a rejected file is Rejected for good and its bytes are gone from the store; an unknown id is 404', async () => {
    const m = await filesApp({ FILES_QUARANTINE: 'true' });
    const { owner, chatId, base } = await chatWithMember(m);
    const scanner = await m.token({ admin: true });
    const file = await uploaded(m, owner.token, chatId, PNG, { fileName: 'flat.png', contentType: 'image/png' });
    const key = (await objectKeyOf(m, file.fileId))!;
    assert.equal(await store.size(key), PNG.length);
    const rejected = await m.call<FileView>(scanner, 'POST', `/api/messenger/admin/files/${file.fileId}/reject`);
    assert.deepEqual([rejected.status, rejected.body.status], [200, 'Rejected']);
    assert.equal(await store.size(key), undefined);
    const sent = await m.call<Err>(owner.token, 'POST', `${base}/messages`, { kind: 'File', fileId: file.fileId });
    assert.deepEqual([sent.status, sent.body.code], [409, 'MSG_FILE_REJECTED']);
    const unknown = await m.call<Err>(scanner, 'POST', '/api/messenger/admin/files/0190a000-0000-7000-8000-00000000beef/release');
    assert.deepEqual([unknown.status, unknown.body.code], [404, 'MSG_FILE_NOT_FOUND']);
  });
});
