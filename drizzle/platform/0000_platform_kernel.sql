CREATE SCHEMA "platform";
--> statement-breakpoint
CREATE TABLE "platform"."inbox" (
	"idempotency_key" varchar(300) PRIMARY KEY NOT NULL,
	"consumer" varchar(100) NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "platform"."job_state" (
	"name" varchar(100) PRIMARY KEY NOT NULL,
	"last_run_at" timestamp with time zone,
	"last_success_at" timestamp with time zone,
	"last_outcome" varchar(20),
	"last_duration_ms" integer,
	"last_counts" jsonb,
	"last_error" varchar(512),
	"runs_total" integer DEFAULT 0 NOT NULL,
	"failures_total" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "platform"."outbox" (
	"id" uuid PRIMARY KEY NOT NULL,
	"topic" varchar(249) NOT NULL,
	"key" varchar(255) NOT NULL,
	"event_type" varchar(200) NOT NULL,
	"contract_version" integer DEFAULT 1 NOT NULL,
	"aggregate_type" varchar(100) NOT NULL,
	"aggregate_id" varchar(100) NOT NULL,
	"occurred_at" timestamp with time zone NOT NULL,
	"correlation_id" varchar(100),
	"payload" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" varchar(512)
);
--> statement-breakpoint
CREATE INDEX "ix_inbox_processed_at" ON "platform"."inbox" USING btree ("processed_at");--> statement-breakpoint
CREATE INDEX "ix_outbox_pending" ON "platform"."outbox" USING btree ("id") WHERE "platform"."outbox"."published_at" is null;--> statement-breakpoint
CREATE INDEX "ix_outbox_published_at" ON "platform"."outbox" USING btree ("published_at") WHERE "platform"."outbox"."published_at" is not null;