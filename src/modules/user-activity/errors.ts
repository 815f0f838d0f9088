import { AppError } from '../../platform/http/index.ts';

/** Stable error codes of the user-activity API. */
export const ERROR = {
  sessionNotFound: 'USER_ACTIVITY_SESSION_NOT_FOUND',
  viewNotFound: 'USER_ACTIVITY_PROPERTY_OBJECT_VIEW_NOT_FOUND',
  filterSnapshotTooLarge: 'USER_ACTIVITY_FILTER_SNAPSHOT_TOO_LARGE',
} as const;

export const sessionNotFound = (message = 'no active session with this id') => new AppError(ERROR.sessionNotFound, message, 404);
