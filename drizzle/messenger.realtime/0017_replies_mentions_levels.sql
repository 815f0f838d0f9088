ALTER TABLE "messenger"."chat_participants" ADD COLUMN "notification_level" varchar(8) DEFAULT 'all' NOT NULL;--> statement-breakpoint
ALTER TABLE "messenger"."messages" ADD COLUMN "reply_to_message_id" uuid;--> statement-breakpoint
ALTER TABLE "messenger"."messages" ADD COLUMN "mentioned_user_ids" uuid[] DEFAULT '{}'::uuid[] NOT NULL;--> statement-breakpoint
ALTER TABLE "messenger"."chat_participants" ADD CONSTRAINT "ck_chat_participants_notification_level" CHECK ("messenger"."chat_participants"."notification_level" in ('all', 'mentions', 'off'));