import { AppError } from '../http/index.ts';

/** The event stream's refusals (codes as clients know them since the stream was the messenger's). */
export const StreamErrors = {
  cursorInvalid: () => new AppError('MSG_EVENTS_CURSOR_INVALID', 'after is not a cursor this service handed out', 400),
  /** Retention trimmed events after this cursor: the client refetches its state, then starts from the head. */
  cursorExpired: () =>
    new AppError('MSG_EVENTS_CURSOR_EXPIRED', 'events after this cursor are past retention: refetch your chats, then continue from a new cursor', 410),
  /**
   * A cursor past the stream's head was never handed out by this stream (a corrupted stored cursor,
   * a database restored to an earlier point): answering "nothing new" would skip every event until
   * the stream caught up, so the client is told to resync instead.
   */
  cursorAhead: () =>
    new AppError('MSG_EVENTS_CURSOR_AHEAD', 'after is beyond the newest event: refetch your chats, then continue from a new cursor (ask without after)', 400),
};
