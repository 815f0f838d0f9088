import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../../support/wait.ts';
import { ALL_EVENTS } from '../support/app.ts';
import { chatWithMember, filesApp, objectKeyOf, PDF, PNG, put, requestUpload, store, uploaded, type Download, type Err, type FileView } from './support.ts';

/**
 * A File message's bytes are the service's: uploaded through a presigned PUT to the
 * real object store, confirmed by the server (real size, sniffed type), sent by the server-issued
 * fileId alone, downloaded through a short-lived presigned GET by members only.
 */

type Message = { id: string; kind: string; fileMeta: { fileId: string; fileName: string; contentType: string; size: number } | null };

describe('files', () => {
  test('upload through the presigned URL, confirm, send by fileId: history and the frame carry the stored metadata; a member downloads the bytes as an attachment', async () => {
    const m = await filesApp();
    const { owner, member, chatId, base } = await chatWithMember(m);
    const client = await m.connect(member.token, ALL_EVENTS);
    const file = await uploaded(m, owner.token, chatId, PDF, { fileName: 'План квартиры.pdf', contentType: 'application/pdf' });
    assert.deepEqual([file.status, file.size, file.contentType], ['Ready', PDF.length, 'application/pdf']);

    const sent = await m.call<Message>(owner.token, 'POST', `${base}/messages`, { kind: 'File', fileId: file.fileId });
    assert.equal(sent.status, 201, JSON.stringify(sent.body));
    const meta = { fileId: file.fileId, fileName: 'План квартиры.pdf', contentType: 'application/pdf', size: PDF.length };
    assert.deepEqual(sent.body.fileMeta, meta);
    const history = await m.call<{ items: Message[] }>(member.token, 'GET', `${base}/messages`);
    assert.deepEqual(history.body.items.at(-1)!.fileMeta, meta);
    await m.dispatch();
    await waitFor('the file message frame', () => client.received.some((e) => e.event === 'message_received'));
    assert.deepEqual((client.received.find((e) => e.event === 'message_received')!.payload as { FileMeta: unknown }).FileMeta, meta);

    const download = await m.call<Download>(member.token, 'GET', `${base}/files/${file.fileId}/download`);
    assert.equal(download.status, 200, JSON.stringify(download.body));
    const bytes = await fetch(download.body.url);
    assert.equal(bytes.status, 200);
    assert.deepEqual(Buffer.from(await bytes.arrayBuffer()), PDF);
    assert.equal(bytes.headers.get('content-type'), 'application/pdf');
    assert.match(bytes.headers.get('content-disposition')!, /^attachment; filename="[^"]*"; filename\*=UTF-8''%D0%9F%D0%BB%D0%B0%D0%BD/);
  });

  test('a stranger, a member who left and a member before the file was sent get no download URL (404)', async () => {
    const m = await filesApp();
    const { owner, member, chatId, base } = await chatWithMember(m);
    const leaver = await m.user();
    assert.equal((await m.call(owner.token, 'POST', `${base}/participants`, { userIds: [leaver.id] })).status, 200);
    const file = await uploaded(m, owner.token, chatId, PNG, { fileName: 'flat.png', contentType: 'image/png' });
    const url = `${base}/files/${file.fileId}/download`;
    // Not sent yet: only its uploader may fetch it.
    assert.equal((await m.call(owner.token, 'GET', url)).status, 200);
    assert.deepEqual(codeOf(await m.call<Err>(member.token, 'GET', url)), [404, 'MSG_FILE_NOT_FOUND']);
    assert.equal((await m.call(owner.token, 'POST', `${base}/messages`, { kind: 'File', fileId: file.fileId })).status, 201);
    assert.equal((await m.call(member.token, 'GET', url)).status, 200);
    assert.equal((await m.call(leaver.token, 'DELETE', `${base}/participants/${leaver.id}`)).status, 204);
    const stranger = await m.user();
    for (const who of [stranger, leaver]) assert.deepEqual(codeOf(await m.call<Err>(who.token, 'GET', url)), [404, 'MSG_FILE_NOT_FOUND']);
  });

  test('the store refuses a forged or altered signature, a body bigger than declared and another Content-Type (403); confirming before any upload is 409 MSG_FILE_NOT_UPLOADED', async () => {
    const m = await filesApp();
    const { owner, chatId, base } = await chatWithMember(m);
    const ticket = await requestUpload(m, owner.token, chatId, { fileName: 'a.pdf', contentType: 'application/pdf', size: PDF.length });
    const forged = { ...ticket, uploadUrl: ticket.uploadUrl.replace(/X-Amz-Signature=([0-9a-f])/, (_, c: string) => `X-Amz-Signature=${c === '0' ? '1' : '0'}`) };
    assert.notEqual(forged.uploadUrl, ticket.uploadUrl);
    const otherKey = { ...ticket, uploadUrl: ticket.uploadUrl.replace(ticket.fileId, '0190a000-0000-7000-8000-000000000001') };
    const bigger = Buffer.concat([PDF, Buffer.alloc(1000, 0x20)]);
    for (const [what, res] of [
      ['forged signature', await put(forged, PDF)],
      ['another object key', await put(otherKey, PDF)],
      ['bigger than declared', await put(ticket, bigger)],
      ['another type', await put(ticket, PDF, { 'Content-Type': 'text/plain' })],
    ] as const) {
      assert.equal(res.status, 403, what);
    }
    assert.equal(await store.size((await objectKeyOf(m, ticket.fileId))!), undefined, 'nothing stored');
    assert.deepEqual(codeOf(await m.call<Err>(owner.token, 'POST', `${base}/files/${ticket.fileId}/complete`)), [409, 'MSG_FILE_NOT_UPLOADED']);
  });

  test('a type lie (PDF bytes declared image/png) is refused at confirmation: 422 MSG_FILE_TYPE_MISMATCH, the object deleted, the file unusable', async () => {
    const m = await filesApp();
    const { owner, chatId, base } = await chatWithMember(m);
    const ticket = await requestUpload(m, owner.token, chatId, { fileName: 'photo.png', contentType: 'image/png', size: PDF.length });
    assert.equal((await put(ticket, PDF)).status, 200);
    const key = (await objectKeyOf(m, ticket.fileId))!;
    assert.equal(await store.size(key), PDF.length);
    const done = await m.call<Err>(owner.token, 'POST', `${base}/files/${ticket.fileId}/complete`);
    assert.deepEqual(codeOf(done), [422, 'MSG_FILE_TYPE_MISMATCH']);
    assert.match(done.body.message, /application\/pdf, not the declared image\/png/);
    assert.equal(await store.size(key), undefined);
    assert.deepEqual(codeOf(await m.call<Err>(owner.token, 'POST', `${base}/messages`, { kind: 'File', fileId: ticket.fileId })), [409, 'MSG_FILE_REJECTED']);
    // Text declared as text: nothing to sniff, and a safe type either way.
    const text = await uploaded(m, owner.token, chatId, Buffer.from('2 rooms, 45 m2\n'), { fileName: 'notes.txt', contentType: 'text/plain' });
    assert.equal(text.status, 'Ready');
  });

  test('a message names only a file the server issued to this sender in this chat, confirmed and not expired; fileMeta from the client is refused', async () => {
    const m = await filesApp();
    const { owner, member, chatId, base } = await chatWithMember(m);
    const other = await chatWithMember(m);
    const send = (token: string, chatBase: string, body: object) => m.call<Err>(token, 'POST', `${chatBase}/messages`, body);
    const mine = await uploaded(m, owner.token, chatId, PNG, { fileName: 'flat.png', contentType: 'image/png' });
    const pending = await requestUpload(m, owner.token, chatId, { fileName: 'b.pdf', contentType: 'application/pdf', size: 10 });
    const theirs = await uploaded(m, other.owner.token, other.chatId, PNG, { fileName: 'x.png', contentType: 'image/png' });

    assert.deepEqual(codeOf(await send(member.token, base, { kind: 'File', fileId: mine.fileId })), [404, 'MSG_FILE_NOT_FOUND'], 'another user\'s file');
    assert.deepEqual(codeOf(await send(owner.token, base, { kind: 'File', fileId: theirs.fileId })), [404, 'MSG_FILE_NOT_FOUND'], 'another chat\'s file');
    assert.deepEqual(codeOf(await send(owner.token, base, { kind: 'File', fileId: '0190a000-0000-7000-8000-000000000002' })), [404, 'MSG_FILE_NOT_FOUND']);
    assert.deepEqual(codeOf(await send(owner.token, base, { kind: 'File', fileId: pending.fileId })), [409, 'MSG_FILE_NOT_READY']);
    assert.deepEqual(codeOf(await send(owner.token, base, { kind: 'File' })), [400, 'MSG_MESSAGE_INVALID']);
    assert.deepEqual(codeOf(await send(owner.token, base, { kind: 'Text', body: 'hi', fileId: mine.fileId })), [400, 'MSG_MESSAGE_INVALID']);
    assert.deepEqual(codeOf(await send(owner.token, base, { kind: 'File', fileId: 'f-1' })), [400, 'VALIDATION_FAILED']);
    const made = { kind: 'File', fileMeta: { fileId: mine.fileId, fileName: 'evil.exe', contentType: 'application/pdf', size: 1 } };
    assert.deepEqual(codeOf(await send(owner.token, base, made)), [400, 'VALIDATION_FAILED']);
    const { rows } = await m.pool.query(`select 1 from messenger.messages where kind = 'File'`);
    assert.equal(rows.length, 0, 'no refused send wrote a message');

    // Past FILES_UNSENT_EXPIRY (24 h) an unsent file cannot be sent; one sent before still can be again.
    const early = await uploaded(m, owner.token, chatId, PDF, { fileName: 'a.pdf', contentType: 'application/pdf' });
    assert.equal((await send(owner.token, base, { kind: 'File', fileId: early.fileId })).status, 201);
    m.clock.advance(25 * 3_600_000);
    assert.deepEqual(codeOf(await send(owner.token, base, { kind: 'File', fileId: mine.fileId })), [409, 'MSG_FILE_EXPIRED']);
    assert.equal((await send(owner.token, base, { kind: 'File', fileId: early.fileId })).status, 201);
  });

  test('confirming twice answers the file as it is; confirming a refused upload is 409 MSG_FILE_REJECTED', async () => {
    const m = await filesApp();
    const { owner, chatId, base } = await chatWithMember(m);
    const file = await uploaded(m, owner.token, chatId, PNG, { fileName: 'flat.png', contentType: 'image/png' });
    const again = await m.call<FileView>(owner.token, 'POST', `${base}/files/${file.fileId}/complete`);
    assert.deepEqual([again.status, again.body], [200, file]);
    const lie = await requestUpload(m, owner.token, chatId, { fileName: 'x.pdf', contentType: 'application/pdf', size: PNG.length });
    await put(lie, PNG);
    assert.equal((await m.call(owner.token, 'POST', `${base}/files/${lie.fileId}/complete`)).status, 422);
    assert.deepEqual(codeOf(await m.call<Err>(owner.token, 'POST', `${base}/files/${lie.fileId}/complete`)), [409, 'MSG_FILE_REJECTED']);
  });
});

const codeOf = (res: { status: number; body: Err }) => [res.status, res.body.code];
