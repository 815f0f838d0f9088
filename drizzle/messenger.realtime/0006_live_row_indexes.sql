DROP INDEX "messenger"."ix_realtime_events_recorded";--> statement-breakpoint
DROP INDEX "messenger"."ix_rto_chat";--> statement-breakpoint
CREATE INDEX "ix_rto_chat" ON "messenger"."realtime_outbox" USING btree ("chat_id") WHERE "messenger"."realtime_outbox"."chat_id" is not null and "messenger"."realtime_outbox"."status" <> 'Done';