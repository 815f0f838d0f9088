import { MESSENGER_DEFAULTS } from '../defaults.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { answer, errorCodes, named, perUserLimit } from '../../../platform/http/index.ts';
import { BoundedInt, Nullable, Text, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { ALLOWED_FILE_TYPE_SUMMARY } from '../messages/file-types.ts';
import { CONTENT_TYPE_PATTERN, FILE_MAX_BYTES, FILE_NAME_MAX_CHARS, FILE_NAME_PATTERN } from '../messages/rules.ts';
import { VIEWED_FILE_STATUSES } from './file-status.ts';
import { completeUpload, downloadFile, requestUpload, type FilesDeps } from './files.ts';
import { listQuarantined, rejectFile, releaseFile } from './quarantine.ts';

const tags = ['messenger-files'];
const NOT_CONFIGURED = 'FILES_NOT_CONFIGURED';
/** The refusals of a file that cannot be used in its state. */
const UNUSABLE = ['MSG_FILE_NOT_READY', 'MSG_FILE_QUARANTINED', 'MSG_FILE_REJECTED', 'MSG_FILE_EXPIRED'] as const;

const ChatParams = Type.Object({ chatId: Uuid });
const FileParams = Type.Object({ chatId: Uuid, fileId: Uuid });
const AdminFileParams = Type.Object({ fileId: Uuid });

const UploadBody = Type.Object(
  {
    fileName: Text({
      minLength: 1,
      maxLength: FILE_NAME_MAX_CHARS,
      pattern: FILE_NAME_PATTERN,
      description: 'One file name, shown to the chat: no / or \\, no control, bidi or direction characters, no leading dot, not a reserved device name (CON, NUL, COM1, …)',
    }),
    contentType: Text({
      minLength: 3,
      maxLength: 255,
      pattern: CONTENT_TYPE_PATTERN,
      description: `A MIME type without parameters, one of: ${ALLOWED_FILE_TYPE_SUMMARY} (any other → 400 MSG_FILE_TYPE_NOT_ALLOWED). Confirmation checks the bytes against it`,
    }),
    size: BoundedInt({ minimum: 0, maximum: FILE_MAX_BYTES, description: 'Bytes the upload will have, at most FILES_MAX_BYTES (100 MiB by default; more → 400 MSG_FILE_TOO_LARGE)' }),
  },
  { additionalProperties: false },
);

export const UploadTicket = named('FileUploadTicket', Type.Object({
  fileId: Uuid,
  uploadUrl: Type.String({ description: 'Presigned URL of the object store: PUT the bytes there, with exactly `headers` and a Content-Length of the declared size (anything else: 403 from the store)' }),
  method: Type.Literal('PUT'),
  headers: Type.Object({ 'Content-Type': Type.String() }, { description: 'Headers the PUT must carry as they are' }),
  expiresAt: Type.String({ format: 'date-time', description: 'The uploadUrl works until then (a fixed lifetime from its issue)' }),
}));

export const FileView = named('FileView', Type.Object({
  fileId: Uuid,
  chatId: Uuid,
  fileName: Type.String(),
  contentType: Type.String(),
  size: Type.Integer({ description: 'Bytes (the stored size once confirmed)' }),
  status: Type.Union(VIEWED_FILE_STATUSES.map((s) => Type.Literal(s))),
  createdAt: Timestamp,
  confirmedAt: Nullable(Timestamp),
}));

export const DownloadTicket = named('FileDownload', Type.Object({
  url: Type.String({ description: 'Presigned GET of the bytes, answered as an attachment of contentType' }),
  expiresAt: Type.String({ format: 'date-time', description: 'The url works until then (5 min): ask again for a fresh one' }),
  fileName: Type.String(),
  contentType: Type.String(),
  size: Type.Integer(),
}));

const QuarantineQuery = Type.Object(
  { after: Type.Optional(Uuid), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: MESSENGER_DEFAULTS.fileQuarantinePageDefault })) },
  { additionalProperties: false },
);
const QuarantineList = Type.Object({
  items: Type.Array(Type.Intersect([FileView, Type.Object({ download: DownloadTicket })])),
  nextAfter: Nullable(Uuid),
});

/**
 * The files REST surface (files.ts): upload, confirm and download for chat members; the quarantine
 * hook's list, release and reject for a scanner with an admin token.
 */
export function registerFileRoutes(app: FastifyInstance, deps: FilesDeps, uploadsPerMinute: number): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const base = '/api/messenger/chats/:chatId/files';

  r.post(base, {
    preHandler: app.requireUser,
    config: perUserLimit(uploadsPerMinute),
    schema: {
      operationId: 'requestFileUpload', tags, params: ChatParams, body: UploadBody,
      summary: 'Ask to upload a file to a chat you are a member of: a file id and a short-lived presigned PUT bound to the declared size and type; then PUT the bytes and confirm',
      response: {
        201: answer('The file id and where to PUT its bytes', UploadTicket),
        400: errorCodes('MSG_FILE_TYPE_NOT_ALLOWED', 'MSG_FILE_TOO_LARGE'),
        404: errorCodes('MSG_CHAT_NOT_FOUND'),
        503: errorCodes(NOT_CONFIGURED),
      },
    },
  }, async (req, reply) => reply.code(201).send(await requestUpload(deps, req.principal!, req.params.chatId, req.body)));

  r.post(`${base}/:fileId/complete`, {
    preHandler: app.requireUser,
    schema: {
      operationId: 'completeFileUpload', tags, params: FileParams,
      summary: 'Confirm your upload: the store\'s size must be the declared one and the bytes of the declared type; then the file is Ready (or Quarantined with FILES_QUARANTINE) and a File message may name its fileId. Again: the file as it is',
      response: {
        200: answer('The confirmed file', FileView),
        404: errorCodes('MSG_FILE_NOT_FOUND'),
        409: errorCodes('MSG_FILE_NOT_UPLOADED', ...UNUSABLE),
        422: errorCodes('MSG_FILE_SIZE_MISMATCH', 'MSG_FILE_TYPE_MISMATCH'),
        503: errorCodes(NOT_CONFIGURED),
      },
    },
  }, async (req) => completeUpload(deps, req.principal!, req.params.chatId, req.params.fileId));

  r.get(`${base}/:fileId/download`, {
    preHandler: app.requireUser,
    schema: {
      operationId: 'getFileDownload', tags, params: FileParams,
      summary: 'A short-lived presigned GET of a Ready file a message of the chat named (or of your own upload), for Active members of the chat only',
      response: { 200: DownloadTicket, 404: errorCodes('MSG_FILE_NOT_FOUND'), 409: errorCodes(...UNUSABLE), 503: errorCodes(NOT_CONFIGURED) },
    },
  }, async (req) => downloadFile(deps, req.principal!, req.params.chatId, req.params.fileId));

  r.get('/api/messenger/admin/files/quarantined', {
    preHandler: app.requireAdmin,
    schema: {
      operationId: 'listQuarantinedFiles', tags, querystring: QuarantineQuery,
      summary: 'The quarantine hook: files held for a scanner (FILES_QUARANTINE), each with a presigned GET of its bytes; page with after=nextAfter',
      response: { 200: QuarantineList, 503: errorCodes(NOT_CONFIGURED) },
    },
  }, async (req) => listQuarantined(deps, { after: req.query.after, limit: req.query.limit ?? MESSENGER_DEFAULTS.fileQuarantinePageDefault }));

  for (const [action, operationId, run, summary] of [
    ['release', 'releaseQuarantinedFile', releaseFile, 'The scanner found the file clean: it becomes Ready (sendable, downloadable)'],
    ['reject', 'rejectQuarantinedFile', rejectFile, 'The scanner refused the file: Rejected for good, its bytes deleted'],
  ] as const) {
    r.post(`/api/messenger/admin/files/:fileId/${action}`, {
      preHandler: app.requireAdmin,
      schema: {
        operationId, tags, params: AdminFileParams, summary,
        response: { 200: FileView, 404: errorCodes('MSG_FILE_NOT_FOUND'), 409: errorCodes('MSG_FILE_NOT_QUARANTINED'), 503: errorCodes(NOT_CONFIGURED) },
      },
    }, async (req) => run(deps, req.params.fileId));
  }
}
