CREATE SCHEMA "notifications";
--> statement-breakpoint
CREATE TABLE "notifications"."channel_configs" (
	"channel" varchar(16) PRIMARY KEY NOT NULL,
	"is_enabled" boolean NOT NULL,
	"provider_key" varchar(50) NOT NULL,
	"max_attempts" integer NOT NULL,
	"retry_backoff" varchar(12) NOT NULL,
	"backoff_initial_seconds" integer NOT NULL,
	"backoff_max_seconds" integer NOT NULL,
	"backoff_multiplier" double precision DEFAULT 2 NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "ck_channel_configs_backoff" CHECK ("notifications"."channel_configs"."retry_backoff" in ('Fixed', 'Exponential')),
	CONSTRAINT "ck_channel_configs_max_attempts" CHECK ("notifications"."channel_configs"."max_attempts" between 1 and 100),
	CONSTRAINT "ck_channel_configs_initial" CHECK ("notifications"."channel_configs"."backoff_initial_seconds" >= 1),
	CONSTRAINT "ck_channel_configs_max" CHECK ("notifications"."channel_configs"."backoff_max_seconds" >= "notifications"."channel_configs"."backoff_initial_seconds"),
	CONSTRAINT "ck_channel_configs_multiplier" CHECK ("notifications"."channel_configs"."backoff_multiplier" >= 1 and "notifications"."channel_configs"."backoff_multiplier" <= 10)
);
--> statement-breakpoint
CREATE TABLE "notifications"."notifications" (
	"id" uuid PRIMARY KEY NOT NULL,
	"recipient_user_id" uuid NOT NULL,
	"channel" varchar(16) NOT NULL,
	"recipient_address" varchar(4096),
	"title" varchar(200) NOT NULL,
	"body" text DEFAULT '' NOT NULL,
	"data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"status" varchar(10) DEFAULT 'Pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone,
	"last_error" varchar(64),
	"provider_message_id" varchar(255),
	"terminal" boolean DEFAULT false NOT NULL,
	"delivery_cycle" integer DEFAULT 1 NOT NULL,
	"delivered_at" timestamp with time zone,
	"read_at" timestamp with time zone,
	"version" integer DEFAULT 1 NOT NULL,
	"lease_owner" uuid,
	"lease_expires_at" timestamp with time zone,
	"source_key" varchar(300),
	"correlation_id" varchar(100),
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"sent_at" timestamp with time zone,
	CONSTRAINT "ck_notifications_status" CHECK ("notifications"."notifications"."status" in ('Pending', 'Sent', 'Failed')),
	CONSTRAINT "ck_notifications_channel" CHECK ("notifications"."notifications"."channel" in ('InApp', 'Email', 'Sms', 'Push', 'Telegram', 'Max', 'WhatsApp', 'Viber')),
	CONSTRAINT "ck_notifications_attempts" CHECK ("notifications"."notifications"."attempts" >= 0),
	CONSTRAINT "ck_notifications_delivery_cycle" CHECK ("notifications"."notifications"."delivery_cycle" >= 1),
	CONSTRAINT "ck_notifications_terminal_is_failed" CHECK (not "notifications"."notifications"."terminal" or "notifications"."notifications"."status" = 'Failed'),
	CONSTRAINT "ck_notifications_sent_has_provider_id" CHECK ("notifications"."notifications"."status" <> 'Sent' or "notifications"."notifications"."provider_message_id" is not null)
);
--> statement-breakpoint
CREATE TABLE "notifications"."push_tokens" (
	"token" varchar(4096) PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"platform" varchar(16) NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ck_push_tokens_platform" CHECK ("notifications"."push_tokens"."platform" in ('android', 'ios', 'web'))
);
--> statement-breakpoint
CREATE INDEX "ix_notifications_due_failed" ON "notifications"."notifications" USING btree ("next_attempt_at") WHERE "notifications"."notifications"."status" = 'Failed' and not "notifications"."notifications"."terminal";--> statement-breakpoint
CREATE INDEX "ix_notifications_pending" ON "notifications"."notifications" USING btree ("id") WHERE "notifications"."notifications"."status" = 'Pending';--> statement-breakpoint
CREATE INDEX "ix_notifications_feed" ON "notifications"."notifications" USING btree ("recipient_user_id","id" DESC NULLS LAST) WHERE "notifications"."notifications"."channel" = 'InApp';--> statement-breakpoint
CREATE UNIQUE INDEX "ux_notifications_source_key" ON "notifications"."notifications" USING btree ("source_key") WHERE "notifications"."notifications"."source_key" is not null;--> statement-breakpoint
CREATE INDEX "ix_push_tokens_user" ON "notifications"."push_tokens" USING btree ("user_id");