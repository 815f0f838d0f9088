import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { AppError } from './errors.ts';
import { errorCodes } from './openapi-components.ts';
import { Text } from '../types/index.ts';

/** What the ops endpoints need from the job runner. */
export interface JobsOps {
  list(): Promise<unknown[]>;
  runNow(name: string): Promise<{ outcome: string; counts: Record<string, number>; jobRunId: string; durationMs: number; error?: string }>;
  has(name: string): boolean;
}

const RunResult = Type.Object({
  jobRunId: Type.String(),
  outcome: Type.String(),
  durationMs: Type.Number(),
  counts: Type.Record(Type.String(), Type.Number()),
  error: Type.Optional(Type.String()),
});

/** On-call endpoints (admin token): see every job's last run, run one now. */
export function registerOpsRoutes(app: FastifyInstance, jobs: JobsOps): void {
  app.get(
    '/api/ops/jobs',
    {
      preHandler: app.requireAdmin,
      schema: {
        operationId: 'listJobs',
        tags: ['ops'],
        summary: 'Every job with its schedule, last run, last success, last outcome and counts',
        // The token's, the admin checks', the input and availability codes are the kernel's (openapi-components.ts).
        response: { 200: Type.Object({ jobs: Type.Array(Type.Unknown()) }) },
      },
    },
    async () => ({ jobs: await jobs.list() }),
  );

  app.post<{ Params: { name: string } }>(
    '/api/ops/jobs/:name/run',
    {
      preHandler: app.requireAdmin,
      schema: {
        operationId: 'runJob',
        tags: ['ops'],
        summary: 'Run a job once now (respects its single-runner lock: a busy lock gives outcome "skipped")',
        params: Type.Object({ name: Text({ minLength: 1, maxLength: 100 }) }),
        response: { 200: RunResult, 404: errorCodes('JOB_NOT_FOUND') },
      },
    },
    async (req) => {
      if (!jobs.has(req.params.name)) throw new AppError('JOB_NOT_FOUND', `no job named ${req.params.name}`, 404);
      return jobs.runNow(req.params.name);
    },
  );
}
