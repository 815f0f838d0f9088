import { isPgError } from '../../platform/errors/index.ts';
import { AppError } from '../../platform/http/index.ts';

/** The identity context's stable error codes (REST `{ code, message }`). */
export const IdentityErrors = {
  /** The admin's own identity user exists and is not Active (Invited, Blocked, Archived). */
  adminInactive: () => new AppError('IDENTITY_ADMIN_INACTIVE', 'your user is not active: admin routes are closed to it', 403),
  userNotFound: (id: string) => new AppError('IDENTITY_USER_NOT_FOUND', `no user ${id}`, 404),
  invalidPhone: () =>
    new AppError('IDENTITY_INVALID_PHONE', 'phoneNumber is not a valid phone number (use +<country code><number>)', 400),
  phoneTaken: () => new AppError('IDENTITY_PHONE_TAKEN', 'another user already has this phone number', 409),
  userIdTaken: (id: string) => new AppError('IDENTITY_USER_ID_TAKEN', `a user with id ${id} already exists`, 409),
  invalidName: (why: string) => new AppError('IDENTITY_INVALID_NAME', why, 400),
  roleNotFound: (id: string) => new AppError('IDENTITY_ROLE_NOT_FOUND', `no role ${id}`, 404),
  roleCodeTaken: (code: string) =>
    new AppError('IDENTITY_ROLE_CODE_TAKEN', `a role with code '${code}' already exists in this company`, 409),
  roleArchived: (id: string) => new AppError('IDENTITY_ROLE_ARCHIVED', `role ${id} is archived`, 409),
  roleCompanyMismatch: () =>
    new AppError('IDENTITY_ROLE_COMPANY_MISMATCH', "a company role can only be granted to a user of the role's company", 409),
  invalidScope: (why: string) => new AppError('IDENTITY_INVALID_SCOPE', why, 400),
  expiresInPast: () => new AppError('IDENTITY_ASSIGNMENT_EXPIRES_IN_PAST', 'expiresAt must be in the future', 400),
  assignmentNotFound: (id: string) => new AppError('IDENTITY_ASSIGNMENT_NOT_FOUND', `no role assignment ${id}`, 404),
  assignmentDuplicate: () =>
    new AppError('IDENTITY_ASSIGNMENT_DUPLICATE', 'the user already holds this role in this scope', 409),
  fanOutTaskNotFound: (id: string) => new AppError('IDENTITY_FANOUT_TASK_NOT_FOUND', `no access fan-out task ${id}`, 404),
  fanOutTaskNotFailed: (status: string) =>
    new AppError('IDENTITY_FANOUT_TASK_NOT_FAILED', `only a Failed task can be replayed (this one is ${status})`, 409),
};

/** True when the PostgreSQL error behind `err` is a unique violation (23505) of `constraint`. */
export const isUniqueViolation = (err: unknown, constraint: string): boolean => isPgError(err, '23505', constraint);
