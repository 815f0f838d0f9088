/**
 * The service exactly as src/main.ts runs it (src/service.ts), with some of its fixed values
 * shortened in code: argv[2] is a JSON ServiceTuning (e.g. a 3 s Kafka session for a SIGKILL test).
 * A test-harness input, not a setting: the deployed process has no way to change these.
 * Usage: node test/support/service-entry.ts '{"kernel":{"kafkaConsumerSessionTimeoutMs":3000}}'
 */
import { runService, type ServiceTuning } from '../../src/service.ts';

await runService(JSON.parse(process.argv[2] ?? '{}') as ServiceTuning);
