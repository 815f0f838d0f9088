CREATE SEQUENCE "messenger"."realtime_event_position" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE TABLE "messenger"."chat_membership_spans" (
	"chat_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"from_version" integer NOT NULL,
	"to_version" integer,
	CONSTRAINT "chat_membership_spans_chat_id_user_id_from_version_pk" PRIMARY KEY("chat_id","user_id","from_version"),
	CONSTRAINT "ck_chat_membership_spans_versions" CHECK ("messenger"."chat_membership_spans"."to_version" is null or "messenger"."chat_membership_spans"."to_version" > "messenger"."chat_membership_spans"."from_version")
);
--> statement-breakpoint
CREATE TABLE "messenger"."realtime_event_horizon" (
	"id" integer PRIMARY KEY NOT NULL,
	"trimmed_below" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messenger"."realtime_events" (
	"position" bigint PRIMARY KEY NOT NULL,
	"outbox_id" uuid NOT NULL,
	"kind" varchar(32) NOT NULL,
	"target_kind" varchar(16) NOT NULL,
	"chat_id" uuid,
	"target_user_id" uuid,
	"message_id" uuid,
	"ref_id" uuid,
	"session_kind" varchar(12),
	"seq" bigint,
	"membership_version" integer,
	"created_at" timestamp with time zone NOT NULL,
	"recorded_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "ix_chat_membership_spans_user" ON "messenger"."chat_membership_spans" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "ux_realtime_events_outbox" ON "messenger"."realtime_events" USING btree ("outbox_id");--> statement-breakpoint
CREATE INDEX "ix_realtime_events_chat" ON "messenger"."realtime_events" USING btree ("chat_id","position") WHERE "messenger"."realtime_events"."target_kind" = 'ChatGroup';--> statement-breakpoint
CREATE INDEX "ix_realtime_events_user" ON "messenger"."realtime_events" USING btree ("target_user_id","position") WHERE "messenger"."realtime_events"."target_kind" = 'User';--> statement-breakpoint
CREATE INDEX "ix_realtime_events_recorded" ON "messenger"."realtime_events" USING btree ("recorded_at");--> statement-breakpoint
-- Members of existing chats: a span from the chat's current membership version (the stream starts now).
INSERT INTO "messenger"."chat_membership_spans" ("chat_id", "user_id", "from_version")
SELECT p."chat_id", p."user_id", c."membership_version"
  FROM "messenger"."chat_participants" p JOIN "messenger"."chats" c ON c."id" = p."chat_id"
 WHERE p."status" = 'Active';--> statement-breakpoint
INSERT INTO "messenger"."realtime_event_horizon" ("id", "trimmed_below") VALUES (1, 0);
