/**
 * The content types a File message may carry: an allow-list, since a deny-list of active content
 * let through every type it did not name (`text/javascript1.5`, `application/hta`,
 * `multipart/x-mixed-replace` passed) and every reader's client opens the file by this type.
 * Images, PDF, office documents, plain text, common audio and video, archives, and
 * `application/octet-stream` for anything else (clients download it rather than open it inline).
 * MIME types are case-insensitive: checked lower-cased.
 */
const ALLOWED_FILE_TYPES: ReadonlySet<string> = new Set([
  'application/octet-stream',
  // Images (no SVG: it is markup that carries script).
  'image/jpeg', 'image/png', 'image/gif', 'image/webp', 'image/heic', 'image/heif', 'image/avif', 'image/bmp', 'image/tiff',
  'application/pdf',
  // Office documents: Microsoft (legacy and OOXML), OpenDocument, RTF.
  'application/msword', 'application/vnd.ms-excel', 'application/vnd.ms-powerpoint',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  'application/vnd.oasis.opendocument.text', 'application/vnd.oasis.opendocument.spreadsheet', 'application/vnd.oasis.opendocument.presentation',
  'application/rtf',
  'text/plain', 'text/csv',
  'audio/mpeg', 'audio/mp4', 'audio/aac', 'audio/ogg', 'audio/opus', 'audio/wav', 'audio/webm', 'audio/flac', 'audio/x-m4a', 'audio/amr',
  'video/mp4', 'video/quicktime', 'video/webm', 'video/ogg', 'video/x-matroska', 'video/3gpp', 'video/mpeg',
  'application/zip', 'application/x-7z-compressed', 'application/vnd.rar', 'application/x-rar-compressed', 'application/gzip', 'application/x-tar',
]);

/** True for a content type a File message may carry (case-insensitive). */
export const isAllowedFileType = (contentType: string): boolean => ALLOWED_FILE_TYPES.has(contentType.toLowerCase());

/** The allowed types, for the refusal's message and the API document's description. */
export const ALLOWED_FILE_TYPE_SUMMARY =
  'images (JPEG, PNG, GIF, WebP, HEIC/HEIF, AVIF, BMP, TIFF), PDF, office documents (Word, Excel, PowerPoint, OpenDocument, RTF), text/plain, text/csv, ' +
  'common audio and video (MP3, AAC, M4A, Ogg, Opus, WAV, WebM, FLAC, AMR, MP4, QuickTime, Matroska, 3GP, MPEG), archives (ZIP, 7z, RAR, gzip, tar) ' +
  'and application/octet-stream for anything else';
