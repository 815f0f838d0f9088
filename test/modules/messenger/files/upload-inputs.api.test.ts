import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FILE_MAX_BYTES, fileMetaProblem } from '../../../../src/modules/messenger/messages/rules.ts';
import { changedTables, storedDigests } from '../../../support/stored.ts';
import { messengerApp } from '../support/app.ts';

/**
 * A File message's metadata is what every other client shows and opens: an id that is no token
 * the storage could have issued, a name that could be read as a path, a device or be disguised, a
 * type outside the allow-list, or an absurd size is refused with a 400 and nothing stored (limits:
 * messages/rules.ts, file-types.ts, the module README).
 */

type Err = { code: string; message: string };
const good = { fileId: 'f-1', fileName: 'plan.pdf', contentType: 'application/pdf', size: 1024 };

describe('File message metadata', () => {
  test('an id that is no token, a path, control, bidi or direction characters, a leading dot or a reserved name in fileName, a type that is no MIME type or not allowed, an oversized size: 400, nothing stored', async () => {
    const m = await messengerApp();
    const me = await m.user();
    const chat = (await m.call<{ id: string }>(me.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [] })).body;
    const before = await storedDigests(m.pool);
    const cases: [Partial<typeof good>, string][] = [
      [{ fileName: '../../etc/passwd' }, 'VALIDATION_FAILED'],
      [{ fileName: 'C:\\Windows\\evil.dll' }, 'VALIDATION_FAILED'],
      [{ fileName: '..' }, 'VALIDATION_FAILED'],
      [{ fileName: 'a\nb.pdf' }, 'VALIDATION_FAILED'],
      [{ fileName: 'invoice\u202Efdp.exe' }, 'VALIDATION_FAILED'],
      [{ fileName: 'x'.repeat(256) }, 'VALIDATION_FAILED'],
      [{ fileName: 'invoice\u200Ffdp.exe' }, 'VALIDATION_FAILED'],
      [{ fileName: 'a\u200Eb.pdf' }, 'VALIDATION_FAILED'],
      [{ fileName: '.htaccess' }, 'VALIDATION_FAILED'],
      [{ fileName: 'CON' }, 'VALIDATION_FAILED'],
      [{ fileName: 'nul.txt' }, 'VALIDATION_FAILED'],
      [{ fileName: 'Com1.pdf' }, 'VALIDATION_FAILED'],
      [{ fileId: '../../secret' }, 'VALIDATION_FAILED'],
      [{ fileId: 'javascript:alert(1)' }, 'VALIDATION_FAILED'],
      [{ fileId: 'a'.repeat(129) }, 'VALIDATION_FAILED'],
      [{ contentType: 'pdf' }, 'VALIDATION_FAILED'],
      [{ contentType: 'text/plain; charset=utf-8' }, 'VALIDATION_FAILED'],
      [{ contentType: 'text/html' }, 'MSG_MESSAGE_INVALID'],
      [{ contentType: 'Text/HTML' }, 'MSG_MESSAGE_INVALID'],
      [{ contentType: 'image/svg+xml' }, 'MSG_MESSAGE_INVALID'],
      [{ contentType: 'application/javascript' }, 'MSG_MESSAGE_INVALID'],
      // Types a deny-list of active content let through.
      [{ contentType: 'text/javascript1.5' }, 'MSG_MESSAGE_INVALID'],
      [{ contentType: 'application/hta' }, 'MSG_MESSAGE_INVALID'],
      [{ contentType: 'multipart/x-mixed-replace' }, 'MSG_MESSAGE_INVALID'],
      [{ size: Number.MAX_SAFE_INTEGER }, 'VALIDATION_FAILED'],
      [{ size: FILE_MAX_BYTES + 1 }, 'VALIDATION_FAILED'],
      [{ size: -1 }, 'VALIDATION_FAILED'],
    ];
    for (const [change, code] of cases) {
      const res = await m.call<Err>(me.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'File', fileMeta: { ...good, ...change } });
      assert.deepEqual([res.status, res.body.code], [400, code], JSON.stringify(change));
    }
    const html = await m.call<Err>(me.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'File', fileMeta: { ...good, contentType: 'text/html' } });
    assert.match(html.body.message, /not one a File message may carry.*application\/octet-stream/);
    assert.deepEqual(changedTables(before, await storedDigests(m.pool)), []);
  });

  test('ordinary ids, names and types pass: a UUID id, non-Latin names with spaces and dots, names that only start like a device, Office, image, audio, video and archive types, the maximum size', async () => {
    const m = await messengerApp();
    const me = await m.user();
    const chat = (await m.call<{ id: string }>(me.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [] })).body;
    for (const change of [
      { fileName: 'План квартиры v2.final.pdf' },
      { fileName: 'console.log.txt', contentType: 'text/plain', fileId: '0190a000-0000-7000-8000-00000000beef' },
      { fileName: 'con-notes.txt', contentType: 'TEXT/PLAIN', fileId: 'Ab_9-z' },
      { contentType: 'audio/mpeg' },
      { contentType: 'video/mp4' },
      { contentType: 'application/zip' },
      { contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' },
      { contentType: 'image/jpeg', size: FILE_MAX_BYTES },
      { contentType: 'application/octet-stream', fileName: 'page.html', size: 0 },
    ]) {
      const res = await m.call(me.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'File', fileMeta: { ...good, ...change } });
      assert.equal(res.status, 201, JSON.stringify([change, res.body]));
    }
  });

  test('fileMetaProblem holds the same limits for callers that bypass the HTTP schema', () => {
    assert.equal(fileMetaProblem(good), undefined);
    assert.match(fileMetaProblem({ ...good, fileName: 'a/b' })!, /fileName/);
    assert.match(fileMetaProblem({ ...good, contentType: 'application/xhtml+xml' })!, /not one a File message may carry/);
    assert.match(fileMetaProblem({ ...good, fileId: '../../secret' })!, /fileId/);
    assert.match(fileMetaProblem({ ...good, fileName: 'nul' })!, /fileName/);
    assert.match(fileMetaProblem({ ...good, size: FILE_MAX_BYTES + 1 })!, /size/);
  });
});
