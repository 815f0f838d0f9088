import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FILE_UPLOAD_REFUSED, MessengerError, type ChatMessage } from '../../../packages/messenger-client/src/index.ts';
import { clientOf } from './support/library-client.ts';
import { chatWithMember, filesApp, PDF, PNG } from './files/support.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * Files and message search through the client library in Node, against the real service and the
 * real object store of `npm test`: an upload goes to the store through its presigned URL, a File
 * message names it by fileId, the other member receives it and downloads the same bytes; search
 * finds a message with its highlight and pages by cursor; each refusal is a typed MessengerError.
 */

const refusal = (p: Promise<unknown>) => p.then(() => assert.fail('resolved'), (e: unknown) => (assert.ok(e instanceof MessengerError, String(e)), e));

describe('client library: files and search', () => {
  test('uploadFile puts the bytes in the store and confirms them; send by fileId reaches the other member, who downloads the same bytes', async () => {
    const m = await filesApp();
    const { owner, member, chatId } = await chatWithMember(m);
    const a = clientOf(m, owner.token);
    const b = clientOf(m, member.token);
    const received: ChatMessage[] = [];
    b.on('message', (msg) => received.push(msg));
    b.trackChat(chatId, 0);
    await b.start();

    const file = await a.uploadFile(chatId, { name: 'План квартиры.pdf', type: 'application/pdf', data: new Uint8Array(PDF) });
    assert.deepEqual([file.status, file.size, file.contentType, file.fileName, file.chatId], ['Ready', PDF.length, 'application/pdf', 'План квартиры.pdf', chatId]);
    await a.send(chatId, { kind: 'File', fileId: file.fileId });
    await a.settled();
    await m.dispatch();
    await waitFor('the member receives the file message', () => received.length === 1);
    const meta = { fileId: file.fileId, fileName: 'План квартиры.pdf', contentType: 'application/pdf', size: PDF.length };
    assert.deepEqual([received[0]!.kind, received[0]!.fileMeta], ['File', meta]);

    const download = await b.fileDownload(chatId, received[0]!.fileMeta!.fileId);
    assert.deepEqual([download.fileName, download.contentType, download.size], [meta.fileName, meta.contentType, meta.size]);
    const bytes = await fetch(download.url);
    assert.equal(bytes.status, 200);
    assert.deepEqual(Buffer.from(await bytes.arrayBuffer()), PDF);
  });

  test('a Blob and an ArrayBuffer upload too', async () => {
    const m = await filesApp();
    const { owner, chatId } = await chatWithMember(m);
    const a = clientOf(m, owner.token);
    const blob = await a.uploadFile(chatId, { name: 'flat.png', type: 'image/png', data: new Blob([new Uint8Array(PNG)]) });
    const buffer = await a.uploadFile(chatId, { name: 'flat.png', type: 'image/png', data: new Uint8Array(PNG).buffer });
    assert.deepEqual([blob.status, blob.size, buffer.status, buffer.size], ['Ready', PNG.length, 'Ready', PNG.length]);
  });

  test("refusals are typed: the service's (type not allowed, bytes of another type, not a member's file) and the store's (FILE_UPLOAD_REFUSED)", async () => {
    const m = await filesApp();
    const { owner, member, chatId } = await chatWithMember(m);
    const a = clientOf(m, owner.token);
    const notAllowed = await refusal(a.uploadFile(chatId, { name: 'run.exe', type: 'application/x-msdownload', data: new Uint8Array(PDF) }));
    assert.deepEqual([notAllowed.code, notAllowed.status], ['MSG_FILE_TYPE_NOT_ALLOWED', 400]);
    const lie = await refusal(a.uploadFile(chatId, { name: 'flat.png', type: 'image/png', data: new Uint8Array(PDF) }));
    assert.deepEqual([lie.code, lie.status], ['MSG_FILE_TYPE_MISMATCH', 422]);
    const file = await a.uploadFile(chatId, { name: 'flat.png', type: 'image/png', data: new Uint8Array(PNG) });
    const unsent = await refusal(clientOf(m, member.token).fileDownload(chatId, file.fileId));
    assert.deepEqual([unsent.code, unsent.status], ['MSG_FILE_NOT_FOUND', 404], 'not sent yet: only its uploader may fetch it');

    // The store checks the signature over the URL: one altered on the way is refused as an expired one would be.
    const altering: typeof fetch = (input, init) =>
      fetch(init?.method === 'PUT' ? String(input).replace(/X-Amz-Signature=([0-9a-f])/, (_, c: string) => `X-Amz-Signature=${c === '0' ? '1' : '0'}`) : input, init);
    const refused = await refusal(clientOf(m, owner.token, altering).uploadFile(chatId, { name: 'a.pdf', type: 'application/pdf', data: new Uint8Array(PDF) }));
    assert.deepEqual([refused.code, refused.status, refused.retryable], [FILE_UPLOAD_REFUSED, 403, false]);
  });

  test('searchMessages finds a sent message with its highlight, within one chat or all, and pages by cursor; a foreign cursor is MSG_SEARCH_CURSOR_INVALID', async () => {
    const m = await filesApp();
    const { owner, member, chatId } = await chatWithMember(m);
    const a = clientOf(m, owner.token);
    const b = clientOf(m, member.token);
    for (const body of ['Смотрели квартиру на Тверской', 'Две квартиры свободны', 'Ключи у консьержа', 'Квартира продана']) await a.send(chatId, { kind: 'Text', body });
    await a.settled();

    const first = await b.searchMessages('квартира', { chatId, limit: 2 });
    assert.equal(first.items.length, 2);
    assert.ok(first.nextCursor);
    const second = await b.searchMessages('квартира', { chatId, limit: 2, cursor: first.nextCursor });
    assert.deepEqual([second.items.length, second.nextCursor], [1, null]);
    const hits = [...first.items, ...second.items];
    assert.deepEqual(hits.map((h) => h.message.body).sort(), ['Две квартиры свободны', 'Квартира продана', 'Смотрели квартиру на Тверской']);
    for (const hit of hits) {
      assert.equal(hit.message.chatId, chatId);
      assert.equal(hit.message.senderUserId, owner.id);
      assert.ok(hit.highlight.some((p) => p.match && p.text.toLowerCase().startsWith('квартир')), JSON.stringify(hit.highlight));
      assert.equal(hit.highlight.map((p) => p.text).join(''), hit.message.body);
    }
    assert.deepEqual((await b.searchMessages('консьерж')).items.map((h) => h.message.body), ['Ключи у консьержа'], 'across all chats');
    const foreign = await refusal(b.searchMessages('квартира', { cursor: 'bm90LWEtY3Vyc29y' }));
    assert.deepEqual([foreign.code, foreign.status], ['MSG_SEARCH_CURSOR_INVALID', 400]);
  });
});
