CREATE TABLE "platform"."ops_audit" (
	"id" uuid PRIMARY KEY NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"actor" varchar(100) NOT NULL,
	"role" varchar(20) NOT NULL,
	"action" varchar(50) NOT NULL,
	"target" varchar(200) NOT NULL,
	"filter" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"dry_run" boolean DEFAULT false NOT NULL,
	"matched" integer,
	"changed" integer DEFAULT 0 NOT NULL,
	"status" varchar(20) NOT NULL,
	"finished_at" timestamp with time zone,
	"error" varchar(512)
);
--> statement-breakpoint
CREATE TABLE "platform"."ops_replicas" (
	"holder" varchar(200) PRIMARY KEY NOT NULL,
	"hub_connections" integer NOT NULL,
	"seen_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "platform"."job_state" ADD COLUMN "recent_runs" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "platform"."job_state" ADD COLUMN "paused_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "platform"."job_state" ADD COLUMN "paused_by" varchar(100);--> statement-breakpoint
CREATE INDEX "ops_audit_at_idx" ON "platform"."ops_audit" USING btree ("at");