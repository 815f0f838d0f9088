import { AppError } from '../../platform/http/index.ts';

/** Stable error codes of the user-activity API. */
export const ERROR = {
  sessionNotFound: 'USER_ACTIVITY_SESSION_NOT_FOUND',
  viewNotFound: 'USER_ACTIVITY_PROPERTY_OBJECT_VIEW_NOT_FOUND',
  filterSnapshotTooLarge: 'USER_ACTIVITY_FILTER_SNAPSHOT_TOO_LARGE',
  deviceSecretRequired: 'USER_ACTIVITY_DEVICE_SECRET_REQUIRED',
  deviceSecretInvalid: 'USER_ACTIVITY_DEVICE_SECRET_INVALID',
  sessionViewLimitReached: 'USER_ACTIVITY_SESSION_VIEW_LIMIT_REACHED',
} as const;

export const sessionNotFound = (message = 'no active session with this id') => new AppError(ERROR.sessionNotFound, message, 404);

/** No `X-Device-Secret` header on a call that changes a session or its views. */
export const deviceSecretRequired = () =>
  new AppError(ERROR.deviceSecretRequired, 'send the device secret the session start returned, in the X-Device-Secret header', 401);

/** The session holds MAX_VIEWS_PER_SESSION views already: no person looks at that many objects in one visit. */
export const sessionViewLimitReached = (max: number) =>
  new AppError(ERROR.sessionViewLimitReached, `this session already has ${max} property-object views; start a new session`, 409);

/** The device secret is not the one of this session (or the session predates device secrets). */
export const deviceSecretInvalid = () => new AppError(ERROR.deviceSecretInvalid, 'the device secret does not match this session', 403);
