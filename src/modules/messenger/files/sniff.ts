import { MESSENGER_DEFAULTS } from '../defaults.ts';
import { fileTypeFromBuffer } from 'file-type';

/**
 * Does a file's content agree with the type its uploader declared? The type is sniffed from the
 * first bytes with `file-type` (magic numbers): where it can tell, the sniffed type must be the
 * declared one or of its family (one container read as another: an .m4a is an MP4, a .docx a ZIP,
 * a .doc an OLE compound file); where it cannot (plain text, CSV, unknown binary), the declared
 * type must be one that is safe whatever the bytes are. Every reader downloads a file as an
 * attachment of its stored type (store.ts), so this guards what a reader's app opens it with.
 */

/** Bytes read from the start of an object: what file-type needs to tell most formats. */
export const SNIFF_BYTES = MESSENGER_DEFAULTS.fileSniffBytes;

/** Declared types whose content file-type cannot recognise, and which are safe as any bytes. */
const UNSNIFFABLE_SAFE: ReadonlySet<string> = new Set(['text/plain', 'text/csv', 'application/octet-stream']);

/** Types that name the same container format, as uploaders and file-type name them. */
const FAMILIES: readonly (readonly string[])[] = [
  // ZIP and the document formats built on it.
  ['application/zip', 'application/epub+zip',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    'application/vnd.openxmlformats-officedocument.presentationml.presentation',
    'application/vnd.oasis.opendocument.text', 'application/vnd.oasis.opendocument.spreadsheet', 'application/vnd.oasis.opendocument.presentation'],
  // OLE compound files: the legacy Office formats.
  ['application/x-cfb', 'application/msword', 'application/vnd.ms-excel', 'application/vnd.ms-powerpoint'],
  // ISO base media files.
  ['video/mp4', 'audio/mp4', 'audio/x-m4a', 'video/quicktime', 'video/3gpp', 'video/3gpp2'],
  ['image/heic', 'image/heif', 'image/heic-sequence', 'image/heif-sequence', 'image/avif'],
  ['audio/ogg', 'audio/opus', 'video/ogg', 'application/ogg'],
  ['video/webm', 'audio/webm', 'video/x-matroska', 'video/matroska'],
  ['application/vnd.rar', 'application/x-rar-compressed'],
  ['image/png', 'image/apng'],
];

const sameFamily = (a: string, b: string): boolean => a === b || FAMILIES.some((f) => f.includes(a) && f.includes(b));

/** Why the content does not match the declared type, or undefined when it does. `declared` is lower-cased. */
export async function typeMismatch(declared: string, firstBytes: Uint8Array): Promise<string | undefined> {
  const sniffed = firstBytes.length === 0 ? undefined : (await fileTypeFromBuffer(firstBytes))?.mime;
  if (sniffed === undefined) {
    return UNSNIFFABLE_SAFE.has(declared) ? undefined : `the content is not ${declared}: its first bytes are of no type that declares`;
  }
  // application/octet-stream promises nothing: it is only ever downloaded as a file.
  if (declared === 'application/octet-stream' || sameFamily(declared, sniffed)) return undefined;
  return `the content is ${sniffed}, not the declared ${declared}`;
}
