/** Value sets of messages (varchar columns, check constraints keep them honest): what a message carries. */

export const MESSAGE_CONTENT_KINDS = ['Text', 'File', 'Card'] as const;
export type MessageContentKind = (typeof MESSAGE_CONTENT_KINDS)[number];
