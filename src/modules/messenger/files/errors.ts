import { AppError } from '../../../platform/http/index.ts';

/**
 * Stable error codes of the messenger's files (REST `{ code, message }`). A file the caller may
 * not see is "not found", as a chat is, so its existence does not leak.
 */
export const FileErrors = {
  notConfigured: () =>
    new AppError(
      'FILES_NOT_CONFIGURED',
      'file storage is not configured on this service: set FILES_S3_BUCKET (with FILES_S3_ENDPOINT, and AWS_REGION and credentials for the AWS SDK); locally `npm run services:up` starts an object store and prints them',
      503,
    ),
  typeNotAllowed: (why: string) => new AppError('MSG_FILE_TYPE_NOT_ALLOWED', why, 400),
  tooLarge: (max: number) => new AppError('MSG_FILE_TOO_LARGE', `a file is at most ${max} bytes (FILES_MAX_BYTES)`, 400),
  notFound: () => new AppError('MSG_FILE_NOT_FOUND', 'no file with this id in this chat for you', 404),
  notUploaded: () => new AppError('MSG_FILE_NOT_UPLOADED', 'the store has no upload for this file yet: PUT it to its uploadUrl first', 409),
  sizeMismatch: (declared: number, actual: number) =>
    new AppError('MSG_FILE_SIZE_MISMATCH', `the upload has ${actual} bytes, not the declared ${declared}: it was deleted, ask for a new upload`, 422),
  typeMismatch: (why: string) => new AppError('MSG_FILE_TYPE_MISMATCH', `${why}: the upload was deleted, ask for a new upload with its real type`, 422),
  notReady: () => new AppError('MSG_FILE_NOT_READY', 'the file is not confirmed yet: confirm its upload first', 409),
  quarantined: () => new AppError('MSG_FILE_QUARANTINED', 'the file is held until a scanner releases it', 409),
  rejected: () => new AppError('MSG_FILE_REJECTED', 'the file was refused (its content, or a scanner) and cannot be used', 409),
  expired: () => new AppError('MSG_FILE_EXPIRED', 'the file was not sent in time and is being deleted: upload it again', 409),
  notQuarantined: (status: string) => new AppError('MSG_FILE_NOT_QUARANTINED', `the file is ${status}, not Quarantined`, 409),
};
