CREATE TABLE "notifications"."chat_notices" (
	"recipient_user_id" uuid NOT NULL,
	"chat_id" uuid NOT NULL,
	"notification_id" uuid NOT NULL,
	"notified_at" timestamp with time zone NOT NULL,
	"request" boolean NOT NULL,
	CONSTRAINT "chat_notices_chat_id_recipient_user_id_pk" PRIMARY KEY("chat_id","recipient_user_id")
);
