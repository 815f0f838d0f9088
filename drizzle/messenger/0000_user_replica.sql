CREATE SCHEMA "messenger";
--> statement-breakpoint
CREATE TABLE "messenger"."contact_search_documents" (
	"user_id" uuid PRIMARY KEY NOT NULL,
	"first_name" varchar(128) NOT NULL,
	"middle_name" varchar(128),
	"last_name" varchar(128) NOT NULL,
	"phone_number" varchar(16),
	"is_active" boolean NOT NULL,
	"revision" bigint NOT NULL,
	"indexed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messenger"."contact_search_pending" (
	"user_id" uuid PRIMARY KEY NOT NULL,
	"revision" bigint NOT NULL,
	"enqueued_at" timestamp with time zone NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messenger"."user_phone_conflicts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"phone_number" varchar(16) NOT NULL,
	"holder_user_id" uuid,
	"identity_user_version" bigint NOT NULL,
	"message_id" varchar(128) NOT NULL,
	"occurrences" integer DEFAULT 1 NOT NULL,
	"status" text DEFAULT 'Open' NOT NULL,
	"resolution" text,
	"detected_at" timestamp with time zone NOT NULL,
	"last_seen_at" timestamp with time zone NOT NULL,
	"resolved_at" timestamp with time zone,
	CONSTRAINT "ck_user_phone_conflicts_status" CHECK ("messenger"."user_phone_conflicts"."status" in ('Open', 'Resolved')),
	CONSTRAINT "ck_user_phone_conflicts_resolution" CHECK ("messenger"."user_phone_conflicts"."resolution" is null or "messenger"."user_phone_conflicts"."resolution" in ('Superseded', 'PhoneReleased'))
);
--> statement-breakpoint
CREATE TABLE "messenger"."users" (
	"id" uuid PRIMARY KEY NOT NULL,
	"first_name" varchar(128) NOT NULL,
	"middle_name" varchar(128),
	"last_name" varchar(128) NOT NULL,
	"phone_number" varchar(16),
	"is_active" boolean NOT NULL,
	"identity_user_version" bigint NOT NULL,
	"revision" bigint DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ck_messenger_users_phone_e164" CHECK (phone_number ~ '^\+[1-9][0-9]{6,14}$'),
	CONSTRAINT "ck_messenger_users_version" CHECK ("messenger"."users"."identity_user_version" >= 1),
	CONSTRAINT "ck_messenger_users_first_name" CHECK ("messenger"."users"."first_name" <> '')
);
--> statement-breakpoint
CREATE INDEX "ix_contact_search_documents_active_phone" ON "messenger"."contact_search_documents" USING btree ("phone_number") WHERE "messenger"."contact_search_documents"."is_active";--> statement-breakpoint
CREATE INDEX "ix_contact_search_pending_due" ON "messenger"."contact_search_pending" USING btree ("next_attempt_at");--> statement-breakpoint
CREATE UNIQUE INDEX "ux_user_phone_conflicts_open" ON "messenger"."user_phone_conflicts" USING btree ("user_id","phone_number") WHERE "messenger"."user_phone_conflicts"."status" = 'Open';--> statement-breakpoint
CREATE INDEX "ix_user_phone_conflicts_open_phone" ON "messenger"."user_phone_conflicts" USING btree ("phone_number","detected_at") WHERE "messenger"."user_phone_conflicts"."status" = 'Open';--> statement-breakpoint
CREATE INDEX "ix_user_phone_conflicts_status_id" ON "messenger"."user_phone_conflicts" USING btree ("status","id");--> statement-breakpoint
CREATE UNIQUE INDEX "ux_messenger_users_live_phone" ON "messenger"."users" USING btree ("phone_number") WHERE "messenger"."users"."is_active";