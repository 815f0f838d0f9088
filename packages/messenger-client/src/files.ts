import { FILE_UPLOAD_REFUSED, MessengerError } from './errors.ts';
import { PeopleApi } from './people.ts';

/**
 * Files in chats: the bytes go straight to the service's object store through a short-lived
 * presigned URL (never through the service), which the service then checks (size, type sniffed
 * from the bytes) before a File message may name the file by its `fileId`.
 */

/** A file of a chat as the service keeps it. Only a `Ready` one can be sent and downloaded. */
export interface FileView {
  fileId: string;
  chatId: string;
  fileName: string;
  contentType: string;
  /** Bytes (the stored size once confirmed). */
  size: number;
  /** `Quarantined`: held until the service's scanner releases it (FILES_QUARANTINE), so not sendable yet. */
  status: 'Pending' | 'Quarantined' | 'Ready' | 'Rejected' | 'Expired';
  createdAt: string;
  confirmedAt: string | null;
}

/** What uploadFile takes: the name shown to the chat, the MIME type (no parameters) and the bytes. */
export interface NewFile {
  name: string;
  type: string;
  data: Blob | ArrayBuffer | Uint8Array;
}

/** Where to PUT a file's bytes (the service's answer to an upload request). */
export interface FileUploadTicket {
  fileId: string;
  uploadUrl: string;
  method: 'PUT';
  /** Headers the PUT must carry as they are (the store checks the signature over them). */
  headers: { 'Content-Type': string };
  expiresAt: string;
}

/** A presigned GET of a file's bytes (an attachment of `contentType`), valid until `expiresAt`. */
export interface FileDownload {
  url: string;
  expiresAt: string;
  fileName: string;
  contentType: string;
  size: number;
}

const filesPath = (chatId: string) => `/api/messenger/chats/${encodeURIComponent(chatId)}/files`;

export class FilesApi extends PeopleApi {
  /**
   * Uploads a file to a chat the user is a member of and confirms it: resolves with the confirmed
   * file (`Ready`, or `Quarantined` while a scanner holds it); send it with
   * `send(chatId, { kind: 'File', fileId })`. Rejects with the service's refusal
   * (MSG_FILE_TYPE_NOT_ALLOWED, MSG_FILE_TOO_LARGE, MSG_CHAT_NOT_FOUND; at confirmation
   * MSG_FILE_TYPE_MISMATCH when the bytes are not of `type`), FILE_UPLOAD_REFUSED when the object
   * store refused the bytes (an expired URL), or NETWORK_ERROR. `signal` aborts the upload.
   */
  async uploadFile(chatId: string, file: NewFile, opts: { signal?: AbortSignal } = {}): Promise<FileView> {
    const size = file.data instanceof Blob ? file.data.size : file.data.byteLength;
    const ticket = await this.rest.json<FileUploadTicket>('POST', filesPath(chatId), { fileName: file.name, contentType: file.type, size });
    const put = await this.rest.external(ticket.uploadUrl, {
      method: ticket.method,
      headers: ticket.headers,
      // fetch sends any typed array; the DOM lib's BodyInit names only those over a plain ArrayBuffer (a Node Buffer may sit on a shared pool).
      body: file.data as RequestInit['body'],
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    if (!put.ok) {
      await put.body?.cancel(); // the store's XML says nothing an app acts on
      throw new MessengerError(FILE_UPLOAD_REFUSED, `the object store refused the upload (HTTP ${put.status}): upload the file again`, put.status);
    }
    return this.rest.json<FileView>('POST', `${filesPath(chatId)}/${encodeURIComponent(ticket.fileId)}/complete`);
  }

  /**
   * A short-lived URL of a file's bytes, for members of the chat once a message names it (and for
   * its uploader before): fetch it, or hand it to an <a download>. Ask again after `expiresAt`.
   * MSG_FILE_NOT_FOUND (404) for anyone else; 409 MSG_FILE_QUARANTINED / _REJECTED / _EXPIRED.
   */
  async fileDownload(chatId: string, fileId: string): Promise<FileDownload> {
    return this.rest.json<FileDownload>('GET', `${filesPath(chatId)}/${encodeURIComponent(fileId)}/download`);
  }
}
