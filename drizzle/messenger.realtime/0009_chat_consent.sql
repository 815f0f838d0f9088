ALTER TABLE "messenger"."chat_events" DROP CONSTRAINT "ck_chat_events_kind";--> statement-breakpoint
ALTER TABLE "messenger"."chat_participants" ADD COLUMN "accepted_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "ix_blacklist_blocked" ON "messenger"."blacklist_entries" USING btree ("blocked_user_id");--> statement-breakpoint
ALTER TABLE "messenger"."chat_events" ADD CONSTRAINT "ck_chat_events_kind" CHECK ("messenger"."chat_events"."kind" in ('Created', 'Renamed', 'ParticipantAdded', 'ParticipantRemoved', 'RequestAccepted'));--> statement-breakpoint
-- Participations that predate consent were made under the old rule: they count as accepted.
UPDATE "messenger"."chat_participants" SET "accepted_at" = "joined_at";
