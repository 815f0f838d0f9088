/** Message rules (message.md, UC-MSG-003) as plain functions. */

export const MESSAGE_CONTENT_KINDS = ['Text', 'File', 'Card'] as const;
export type MessageContentKind = (typeof MESSAGE_CONTENT_KINDS)[number];

export interface FileMeta {
  fileId: string;
  fileName: string;
  contentType: string;
  size: number;
}

export interface MessageContent {
  kind: MessageContentKind;
  body?: string;
  fileMeta?: FileMeta;
  cardText?: string;
}

/** What is wrong with a new message's content, or undefined. Exactly the field of its kind is set. */
export function contentProblem(c: MessageContent, maxChars: number): string | undefined {
  const set = { Text: c.body, File: c.fileMeta, Card: c.cardText };
  for (const [kind, value] of Object.entries(set)) {
    if (kind !== c.kind && value !== undefined) return `a ${c.kind} message carries no ${kind === 'Text' ? 'body' : kind === 'File' ? 'fileMeta' : 'cardText'}`;
  }
  if (c.kind === 'File') return c.fileMeta ? undefined : 'a File message needs fileMeta';
  const text = c.kind === 'Text' ? c.body : c.cardText;
  if (text === undefined || text.trim() === '') return `a ${c.kind} message needs ${c.kind === 'Text' ? 'a body' : 'cardText'}`;
  if ([...text].length > maxChars) return `the text is longer than ${maxChars} characters`;
  return undefined;
}

/** The sender may edit within the edit window (inclusive; UC-MSG-003); a clock earlier than SentAt counts as inside. */
export const withinEditWindow = (sentAt: Date, now: Date, windowSeconds: number): boolean =>
  now.getTime() - sentAt.getTime() <= windowSeconds * 1000;

export const isEditable = (kind: MessageContentKind): boolean => kind === 'Text' || kind === 'Card';
