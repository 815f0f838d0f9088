-- NotificationStatusChanged frames now go through the messenger's realtime outbox (it runs before this
-- part: parts migrate by name). Frames still waiting here move there first, in their order (ids
-- shaped like UUIDv7: their time, then their old id), so a deploy loses none.
INSERT INTO "messenger"."realtime_outbox" ("id", "kind", "target_kind", "target_user_id", "payload", "next_attempt_at", "created_at", "updated_at")
SELECT (lpad(to_hex((extract(epoch from "created_at") * 1000)::bigint), 12, '0') || '70008' || lpad(to_hex("id"), 15, '0'))::uuid,
       'NotificationStatusChanged', 'User', "recipient_user_id", "frame", "created_at", "created_at", "created_at"
  FROM "notifications"."status_events";--> statement-breakpoint
DROP TABLE "notifications"."status_events" CASCADE;
