import type { Principal } from '../../../platform/http/index.ts';
import type { MessagesContext } from './context.ts';
import { ChatErrors } from '../errors.ts';
import type { MessageContentKind } from '../model/message-kinds.ts';
import { refuseInactiveUser } from '../user-replica/replica-reads.ts';
import type { FileMeta } from './rules.ts';

/**
 * A send's content as the send statement takes it: a File message's `fileId` becomes the stored
 * file's metadata (the files part's fileForMessage, handed over in index.ts); a fileId on another
 * kind, or a File message without one, is MSG_MESSAGE_INVALID. An inactive caller is refused first,
 * as every messenger route refuses one (the send route skips the early check: send.ts).
 */
export async function withFileMeta<T extends { kind: MessageContentKind; fileId?: string }>(
  ctx: Pick<MessagesContext, 'db' | 'fileForMessage'>,
  caller: Principal,
  chatId: string,
  body: T,
): Promise<Omit<T, 'fileId'> & { fileMeta?: FileMeta }> {
  const { fileId, ...rest } = body;
  if (body.kind !== 'File') {
    if (fileId !== undefined) throw ChatErrors.invalidMessage(`a ${body.kind} message carries no fileId`);
    return rest;
  }
  await refuseInactiveUser(ctx.db, caller.userId);
  if (fileId === undefined) throw ChatErrors.invalidMessage('a File message needs the fileId of a confirmed upload');
  return { ...rest, fileMeta: await ctx.fileForMessage(caller, chatId, fileId) };
}
