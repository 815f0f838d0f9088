-- The dispatcher's outcomes: each lands only on the RowVersion its claim left (every change of a
-- row's status bumps it, so an unchanged RowVersion is a row still Pending as claimed). The rows are
-- found by id through the primary key whatever the planner believes: a plan made while the table was
-- small (a sequential scan) or while nothing was Pending (every Pending row read through
-- ix_rto_due) turned each outcome into a scan of the backlog once it grew, and a connection keeps its
-- plan until the next ANALYZE. The function pins the index (plpgsql keeps its plan per connection,
-- as a named statement would, without planning each call). Its own transaction commits without
-- waiting for the WAL flush (see outbox-sql.ts, ASYNC_COMMIT).
CREATE FUNCTION "messenger"."realtime_record_outcomes"(
  "ids" uuid[], "versions" integer[], "statuses" varchar[], "errors" varchar[], "deltas" integer[], "nexts" timestamptz[], "at" timestamptz
)
RETURNS SETOF uuid
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY
    UPDATE messenger.realtime_outbox o
       SET status = v.status,
           last_error = CASE WHEN v.status = 'Done' THEN NULL ELSE coalesce(v.err, o.last_error) END,
           attempts = greatest(0, o.attempts + v.delta),
           next_attempt_at = coalesce(v.next, o.next_attempt_at),
           row_version = o.row_version + 1,
           updated_at = "at"
      FROM unnest("ids", "versions", "statuses", "errors", "deltas", "nexts") AS v(id, ver, status, err, delta, next)
     WHERE o.id = ANY ("ids") AND o.id = v.id AND o.row_version = v.ver
    RETURNING o.id;
END
$$;
