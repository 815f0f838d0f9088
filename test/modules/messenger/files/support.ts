import assert from 'node:assert/strict';
import { after } from 'node:test';
import { messengerApp, type MessengerApp } from '../support/app.ts';
import { objectStore, objectStoreEnv } from '../../../support/objectstore.ts';

/** Files tests: the messenger on the real object store of `npm test`, and the steps of an upload as a client takes them. */

/** Real first bytes of each format, so the service's sniffing sees what a client's file would have. */
export const PNG = Buffer.concat([
  Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex'),
  Buffer.from('0000000d49444154789c6300010000050001', 'hex'),
]);
export const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');

export type Err = { code: string; message: string };
export interface Ticket { fileId: string; uploadUrl: string; method: 'PUT'; headers: { 'Content-Type': string }; expiresAt: string }
export interface FileView { fileId: string; chatId: string; fileName: string; contentType: string; size: number; status: string }
export interface Download { url: string; expiresAt: string; fileName: string; contentType: string; size: number }

export const store = objectStore();
after(() => store.close());

export async function filesApp(env: Record<string, string> = {}): Promise<MessengerApp> {
  return messengerApp({ ...objectStoreEnv(), ...env });
}

/** A user with a group chat of their own and one other member. */
export async function chatWithMember(m: MessengerApp) {
  const owner = await m.user();
  const member = await m.user();
  const chat = await m.call<{ id: string }>(owner.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Flat 3', memberUserIds: [member.id] });
  assert.equal(chat.status, 201, JSON.stringify(chat.body));
  return { owner, member, chatId: chat.body.id, base: `/api/messenger/chats/${chat.body.id}` };
}

export async function requestUpload(m: MessengerApp, token: string, chatId: string, file: { fileName: string; contentType: string; size: number }): Promise<Ticket> {
  const res = await m.call<Ticket>(token, 'POST', `/api/messenger/chats/${chatId}/files`, file);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** PUTs the bytes to the presigned URL as a browser or app would (fetch, the ticket's headers). */
export const put = (ticket: Ticket, bytes: Buffer, headers: Record<string, string> = ticket.headers) =>
  fetch(ticket.uploadUrl, { method: 'PUT', body: bytes, headers });

/** Request, PUT and confirm: the file as confirmed. */
export async function uploaded(m: MessengerApp, token: string, chatId: string, bytes: Buffer, file: { fileName: string; contentType: string }): Promise<FileView> {
  const ticket = await requestUpload(m, token, chatId, { ...file, size: bytes.length });
  const putRes = await put(ticket, bytes);
  assert.equal(putRes.status, 200, await putRes.text());
  const done = await m.call<FileView>(token, 'POST', `/api/messenger/chats/${chatId}/files/${ticket.fileId}/complete`);
  assert.equal(done.status, 200, JSON.stringify(done.body));
  return done.body;
}

/** Where the service keeps a file's bytes (messenger.files.object_key). */
export async function objectKeyOf(m: MessengerApp, fileId: string): Promise<string | undefined> {
  const { rows } = await m.pool.query<{ object_key: string }>('select object_key from messenger.files where id = $1', [fileId]);
  return rows[0]?.object_key;
}
