import { AppError } from '../../../platform/http/index.ts';
import { IdentityErrors } from '../errors.ts';

/** Pure rules of RoleDefinition / RolePermission. */

export type RoleStatus = 'Active' | 'Archived';

export interface Role {
  id: string;
  code: string;
  name: string;
  companyId: string | null;
  status: RoleStatus;
  version: number;
  createdAt: Date;
  updatedAt: Date;
  archivedAt: Date | null;
}

/** e.g. `sales-manager`, `platform.support`. */
export const ROLE_CODE_PATTERN = '^[A-Za-z][A-Za-z0-9_.:-]{0,99}$';
/** e.g. `crm.deals.read`, `catalog:objects:write`. */
export const PERMISSION_CODE_PATTERN = '^[a-z][a-z0-9_-]*([.:][a-z0-9_*-]+)*$';
export const PERMISSION_CODE_MAX = 150;
export const PERMISSIONS_MAX = 500;

const permissionRe = new RegExp(PERMISSION_CODE_PATTERN);

/** The permission set as stored: trimmed, unique, sorted (so equality is a plain comparison). */
export function normalizePermissions(codes: readonly string[]): string[] {
  const set = new Set(codes.map((c) => c.trim()));
  for (const code of set) {
    if (code.length > PERMISSION_CODE_MAX || !permissionRe.test(code)) {
      throw new AppError('IDENTITY_INVALID_PERMISSION', `'${code.slice(0, 60)}' is not a permission code`, 400);
    }
  }
  if (set.size > PERMISSIONS_MAX) {
    throw new AppError('IDENTITY_INVALID_PERMISSION', `a role holds at most ${PERMISSIONS_MAX} permissions`, 400);
  }
  return [...set].sort();
}

export function samePermissions(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((code, i) => code === b[i]);
}

export function ensureRoleActive(role: Pick<Role, 'id' | 'status'>): void {
  if (role.status !== 'Active') throw IdentityErrors.roleArchived(role.id);
}

export type FanOutMode = 'inline' | 'queued';

/**
 * set-role-permissions: a role whose unique active users fit under the threshold announces them in
 * the operation's own transaction; a bigger one queues one AccessFanOutTask instead.
 */
export function chooseFanOut(uniqueActiveUsers: number, inlineThreshold: number): FanOutMode {
  return uniqueActiveUsers <= inlineThreshold ? 'inline' : 'queued';
}
