DROP INDEX "user_activity"."ux_sessions_active_anonymous_id";--> statement-breakpoint
ALTER TABLE "user_activity"."sessions" ADD COLUMN "device_secret_hash" char(64);--> statement-breakpoint
CREATE UNIQUE INDEX "ux_sessions_active_device" ON "user_activity"."sessions" USING btree ("anonymous_id","device_secret_hash") WHERE "user_activity"."sessions"."status" = 'Active';