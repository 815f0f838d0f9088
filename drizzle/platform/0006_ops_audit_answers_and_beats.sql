ALTER TABLE "platform"."ops_audit" ADD COLUMN "http_status" smallint;--> statement-breakpoint
ALTER TABLE "platform"."ops_audit" ADD COLUMN "holder" varchar(200);--> statement-breakpoint
ALTER TABLE "platform"."ops_audit" ADD COLUMN "beat_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "ops_audit_running_idx" ON "platform"."ops_audit" USING btree ("beat_at") WHERE status = 'running';