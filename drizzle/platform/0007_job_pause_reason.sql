ALTER TABLE "platform"."job_state" ADD COLUMN "pause_reason" varchar(300);--> statement-breakpoint
ALTER TABLE "platform"."job_state" ADD COLUMN "pause_until" timestamp with time zone;