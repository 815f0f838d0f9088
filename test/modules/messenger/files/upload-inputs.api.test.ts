import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FILE_MAX_BYTES, fileMetaProblem } from '../../../../src/modules/messenger/messages/rules.ts';
import { changedTables, storedDigests } from '../../../support/stored.ts';
import { messengerApp } from '../support/app.ts';
import { chatWithMember, filesApp, type Err } from './support.ts';

/**
 * What an upload declares is what every other client shows and opens: a name that could be read
 * as a path, a device or be disguised, a type outside the allow-list, a size past FILES_MAX_BYTES,
 * or ids that are no UUIDs are refused with a 400 and nothing stored (limits: messages/rules.ts,
 * file-types.ts, the module README). Without a store, every file route says so (503).
 */

const good = { fileName: 'plan.pdf', contentType: 'application/pdf', size: 1024 };

describe('upload requests', () => {
  test('a path, control, bidi or direction characters, a leading dot or a reserved name in fileName, a type that is no MIME type or not allowed, a size past the limit: 400, nothing stored', async () => {
    const m = await filesApp({ FILES_MAX_BYTES: '1048576' });
    const { owner, base } = await chatWithMember(m);
    const before = await storedDigests(m.pool);
    const cases: [Record<string, unknown>, string][] = [
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
      [{ fileName: 'a\u0000.pdf' }, 'VALIDATION_FAILED'],
      [{ contentType: 'pdf' }, 'VALIDATION_FAILED'],
      [{ contentType: 'text/plain; charset=utf-8' }, 'VALIDATION_FAILED'],
      [{ contentType: 'text/html' }, 'MSG_FILE_TYPE_NOT_ALLOWED'],
      [{ contentType: 'Text/HTML' }, 'MSG_FILE_TYPE_NOT_ALLOWED'],
      [{ contentType: 'image/svg+xml' }, 'MSG_FILE_TYPE_NOT_ALLOWED'],
      [{ contentType: 'application/javascript' }, 'MSG_FILE_TYPE_NOT_ALLOWED'],
      // Types a deny-list of active content let through.
      [{ contentType: 'text/javascript1.5' }, 'MSG_FILE_TYPE_NOT_ALLOWED'],
      [{ contentType: 'application/hta' }, 'MSG_FILE_TYPE_NOT_ALLOWED'],
      [{ contentType: 'multipart/x-mixed-replace' }, 'MSG_FILE_TYPE_NOT_ALLOWED'],
      [{ size: 1048577 }, 'MSG_FILE_TOO_LARGE'],
      [{ size: FILE_MAX_BYTES + 1 }, 'VALIDATION_FAILED'],
      [{ size: Number.MAX_SAFE_INTEGER }, 'VALIDATION_FAILED'],
      [{ size: -1 }, 'VALIDATION_FAILED'],
      [{ size: 1.5 }, 'VALIDATION_FAILED'],
      [{ size: '10' }, 'VALIDATION_FAILED'],
      [{ objectKey: '../other-chat/file' }, 'VALIDATION_FAILED'],
    ];
    for (const [change, code] of cases) {
      const res = await m.call<Err>(owner.token, 'POST', `${base}/files`, { ...good, ...change });
      assert.deepEqual([res.status, res.body.code], [400, code], JSON.stringify(change));
    }
    const html = await m.call<Err>(owner.token, 'POST', `${base}/files`, { ...good, contentType: 'text/html' });
    assert.match(html.body.message, /not one a File message may carry.*application\/octet-stream/);
    for (const url of [`/api/messenger/chats/not-a-uuid/files`, `${base}/files/not-a-uuid/complete`, `${base}/files/../../x/complete`]) {
      const res = await m.call<Err>(owner.token, 'POST', url, url.endsWith('/files') ? good : undefined);
      assert.equal(res.status, url.includes('..') ? 404 : 400, `${url}: ${JSON.stringify(res.body)}`);
    }
    assert.equal((await m.call<Err>(owner.token, 'GET', `${base}/files/0190a000-0000-7000-8000-00000000beef%00/download`)).status, 400);
    assert.deepEqual(changedTables(before, await storedDigests(m.pool)), []);
  });

  test('ordinary names and types pass: non-Latin names with spaces and dots, names that only start like a device, upper-case types, Office, audio, video and archive types', async () => {
    const m = await filesApp();
    const { owner, base } = await chatWithMember(m);
    for (const change of [
      { fileName: 'План квартиры v2.final.pdf' },
      { fileName: 'console.log.txt', contentType: 'text/plain' },
      { fileName: 'con-notes.txt', contentType: 'TEXT/PLAIN' },
      { contentType: 'audio/mpeg' },
      { contentType: 'video/mp4' },
      { contentType: 'application/zip' },
      { contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' },
      { contentType: 'application/octet-stream', fileName: 'page.html', size: 0 },
    ]) {
      const res = await m.call<{ headers: Record<string, string> }>(owner.token, 'POST', `${base}/files`, { ...good, ...change });
      assert.equal(res.status, 201, JSON.stringify([change, res.body]));
      assert.equal(res.body.headers['Content-Type'], (change.contentType ?? good.contentType).toLowerCase());
    }
  });

  test('a stranger to the chat gets 404 MSG_CHAT_NOT_FOUND and no upload URL', async () => {
    const m = await filesApp();
    const { base } = await chatWithMember(m);
    const stranger = await m.user();
    const res = await m.call<Err>(stranger.token, 'POST', `${base}/files`, good);
    assert.deepEqual([res.status, res.body.code], [404, 'MSG_CHAT_NOT_FOUND']);
  });

  test('without FILES_S3_BUCKET every file route answers 503 FILES_NOT_CONFIGURED naming the settings, and a File message cannot be sent', async () => {
    const m = await messengerApp();
    const { owner, base } = await chatWithMember(m);
    const id = '0190a000-0000-7000-8000-00000000beef';
    for (const [method, url, body] of [
      ['POST', `${base}/files`, good],
      ['POST', `${base}/files/${id}/complete`, undefined],
      ['GET', `${base}/files/${id}/download`, undefined],
      ['POST', `${base}/messages`, { kind: 'File', fileId: id }],
    ] as const) {
      const res = await m.call<Err>(owner.token, method, url, body);
      assert.deepEqual([res.status, res.body.code], [503, 'FILES_NOT_CONFIGURED'], url);
      assert.match(res.body.message, /FILES_S3_BUCKET.*npm run services:up/);
    }
  });

  test('a store that cannot be reached: confirming answers 503 SERVICE_UNAVAILABLE with Retry-After, not a 500', async () => {
    // A port nothing listens on: the connection is refused for real.
    const m = await filesApp({ FILES_S3_ENDPOINT: 'http://127.0.0.1:9' });
    const { owner, base } = await chatWithMember(m);
    const ticket = await m.call<{ fileId: string }>(owner.token, 'POST', `${base}/files`, good);
    assert.equal(ticket.status, 201, 'signing needs no store');
    const done = await m.app.inject({ method: 'POST', url: `${base}/files/${ticket.body.fileId}/complete`, headers: { authorization: `Bearer ${owner.token}` } });
    assert.deepEqual([done.statusCode, done.json().code], [503, 'SERVICE_UNAVAILABLE']);
    assert.ok(Number(done.headers['retry-after']) > 0);
  });

  test('fileMetaProblem holds the same limits on the metadata the send statement stores', () => {
    const meta = { fileId: '0190a000-0000-7000-8000-00000000beef', ...good };
    assert.equal(fileMetaProblem(meta), undefined);
    assert.match(fileMetaProblem({ ...meta, fileName: 'a/b' })!, /fileName/);
    assert.match(fileMetaProblem({ ...meta, contentType: 'application/xhtml+xml' })!, /not one a File message may carry/);
    assert.match(fileMetaProblem({ ...meta, fileId: '../../secret' })!, /fileId/);
    assert.match(fileMetaProblem({ ...meta, fileName: 'nul' })!, /fileName/);
    assert.match(fileMetaProblem({ ...meta, size: FILE_MAX_BYTES + 1 })!, /size/);
  });
});
