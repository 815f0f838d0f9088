-- Rows to one user (UserDeactivated, other modules' carried frames) have no chat: the chat index leaves them out, so
-- each such insert maintains one index less. No statement looks rows up by a null chat.
DROP INDEX "messenger"."ix_rto_chat";--> statement-breakpoint
CREATE INDEX "ix_rto_chat" ON "messenger"."realtime_outbox" USING btree ("chat_id") WHERE "messenger"."realtime_outbox"."chat_id" is not null;