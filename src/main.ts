/**
 * Entry point: the service with its fixed values (src/service.ts: config, database, migrations, app,
 * listen, background work, graceful stop on SIGTERM/SIGINT).
 */
import { runService } from './service.ts';

await runService();
