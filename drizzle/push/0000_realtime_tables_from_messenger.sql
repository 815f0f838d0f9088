-- The push part's tables move into its own schema from the messenger's, whose part created them
-- (drizzle/messenger.realtime/0000-0012, and notifications/0006 wrote rows into the outbox). This part
-- applies after every module's part (migrationParts), so on a fresh database as on an old one the
-- tables exist by now. ALTER ... SET SCHEMA keeps every row, id, position, index and constraint, and
-- the sequence keeps its value: a client's stream cursor stays valid across the deploy.
CREATE SCHEMA "push";--> statement-breakpoint
ALTER TABLE "messenger"."realtime_outbox" SET SCHEMA "push";--> statement-breakpoint
ALTER TABLE "messenger"."realtime_events" SET SCHEMA "push";--> statement-breakpoint
ALTER TABLE "messenger"."realtime_event_horizon" SET SCHEMA "push";--> statement-breakpoint
ALTER SEQUENCE "messenger"."realtime_event_position" SET SCHEMA "push";--> statement-breakpoint
-- The kinds and session kinds are the modules' words: push.registerKinds checks each kind at start and
-- the writer refuses a kind nobody registered, so the table no longer lists them.
ALTER TABLE "push"."realtime_outbox" DROP CONSTRAINT "ck_rto_kind";--> statement-breakpoint
ALTER TABLE "push"."realtime_outbox" DROP CONSTRAINT "ck_rto_session_kind";--> statement-breakpoint
-- The dispatcher's outcomes (as messenger.realtime/0008 wrote them, now over push.realtime_outbox): each
-- lands only on the RowVersion its claim left; the rows are found by id through the primary key
-- whatever the planner believes, and its own transaction commits without waiting for the WAL flush.
CREATE FUNCTION "push"."realtime_record_outcomes"(
  "ids" uuid[], "versions" integer[], "statuses" varchar[], "errors" varchar[], "deltas" integer[], "nexts" timestamptz[], "at" timestamptz
)
RETURNS SETOF uuid
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY
    UPDATE push.realtime_outbox o
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
$$;--> statement-breakpoint
DROP FUNCTION "messenger"."realtime_record_outcomes"(uuid[], integer[], varchar[], varchar[], integer[], timestamptz[], timestamptz);--> statement-breakpoint
-- Seed 000 names the table messenger.realtime_outbox, and its runbook SQL (read LastError; re-enqueue:
-- Quarantined -> Pending, Attempts = 0) keeps working on that name: a plain view, which PostgreSQL
-- updates through to the table. It lists the columns as they are now; the service itself uses push's name.
CREATE VIEW "messenger"."realtime_outbox" AS SELECT * FROM "push"."realtime_outbox";
