/**
 * Prints a development JWT signed with JWT_SECRET (or the dev default):
 *   npm run token -- --user <uuid> [--admin] [--ops-viewer] [--expires 12h]
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { signToken } from '../src/platform/http/auth.ts';

const { values } = parseArgs({
  options: {
    user: { type: 'string' },
    admin: { type: 'boolean', default: false },
    // The read-only role of the ops console (ops_role: viewer); an --admin token is an operator.
    'ops-viewer': { type: 'boolean', default: false },
    expires: { type: 'string', default: '12h' },
  },
});
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
if (!values.user || !uuid.test(values.user)) {
  process.stderr.write('usage: npm run token -- --user <uuid> [--admin] [--ops-viewer] [--expires 12h]\n');
  process.exit(2);
}
const config = loadConfig();
process.stdout.write(
  `${await signToken({ userId: values.user, admin: values.admin, ...(values['ops-viewer'] ? { opsRole: 'viewer' as const } : {}) }, config.JWT_SECRET, {
    expiresIn: values.expires,
    issuer: config.AUTH_ISSUER,
    audience: config.AUTH_AUDIENCE,
  })}\n`,
);
