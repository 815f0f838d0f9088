import { after } from 'node:test';
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../../../src/app.ts';
import { loadConfig } from '../../../../src/config.ts';
import { createPool } from '../../../../src/platform/db/index.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import messenger from '../../../../src/modules/messenger/index.ts';
import type { MessengerApp } from './app.ts';

/** Another replica of the service over the same database (own hub, pool; no jobs), closed when the file ends. */
export async function secondReplica(m: MessengerApp, env: Record<string, string>): Promise<{ app: FastifyInstance; url: string }> {
  const config = loadConfig({ LOG_LEVEL: 'warn', JOBS_ENABLED: 'false', PORT: '0', ...env });
  const pool = createPool(m.database.url, 5);
  const app = await buildApp(config, { pool, databaseUrl: m.database.url, log: createLogger('warn'), modules: [messenger], clock: m.clock });
  await app.listen({ host: '127.0.0.1', port: 0 });
  after(async () => {
    await app.close();
    await pool.end();
  });
  return { app, url: `http://127.0.0.1:${(app.server.address() as net.AddressInfo).port}/hubs/messenger` };
}
