-- The outbox publisher's read: unpublished rows after a cursor, in id order. A pass that comes back
-- short starts over from the first pending row (a row can commit after a later id was sent), so the
-- read walks every ix_outbox_pending entry of the rows published since the last vacuum. A plain
-- index scan marks those entries dead as it passes (the next walk skips them without a heap visit);
-- a bitmap scan, which the planner picks from its small row estimate, marks nothing and visits the
-- heap for each of them on every pass (measured: ~100 µs a message at 1,000 messages a second).
-- The function pins the plain index scan; plpgsql keeps its plan per connection.
CREATE FUNCTION "platform"."outbox_pending_after"("after_id" uuid, "max_rows" integer)
RETURNS TABLE (
  "id" uuid, "topic" varchar, "key" varchar, "eventType" varchar, "contractVersion" integer,
  "aggregateType" varchar, "aggregateId" varchar, "occurredAt" text, "correlationId" varchar,
  "payload" text, "traceparent" varchar, "createdAtMs" float8
)
LANGUAGE plpgsql STABLE
SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
    SELECT o.id, o.topic, o.key, o.event_type, o.contract_version, o.aggregate_type, o.aggregate_id,
           to_char(o.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           o.correlation_id, o.payload::text, o.traceparent, (extract(epoch FROM o.created_at) * 1000)::float8
      FROM platform.outbox o
     WHERE o.published_at IS NULL AND o.id > after_id
     ORDER BY o.id
     LIMIT max_rows;
END
$$;
