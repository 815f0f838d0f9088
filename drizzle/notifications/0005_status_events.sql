CREATE TABLE "notifications"."status_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "notifications"."status_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"recipient_user_id" uuid NOT NULL,
	"notification_id" uuid NOT NULL,
	"frame" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
