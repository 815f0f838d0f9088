import { Type } from '@sinclair/typebox';
import type { SettingsOf } from '../types/index.ts';

/** Settings of the ops console (/ops) and its API (/api/ops), spread into the one settings schema by src/config.ts. */
export const opsSettings = {
  OPS_TRACE_URL: Type.Optional(
    Type.String({
      maxLength: 500,
      pattern: '^https?://.*\\{traceId\\}',
      description:
        "Link from a failed row to its trace in your tracing UI, with {traceId} where the id goes (e.g. https://tempo.example.com/trace/{traceId}); unset: no trace links. Rows that store no trace id get none either way",
    }),
  ),
};

export type OpsSettings = SettingsOf<typeof opsSettings>;
