ALTER TABLE "notifications"."notifications" ADD COLUMN "send_intent_cycle" integer;--> statement-breakpoint
ALTER TABLE "notifications"."notifications" ADD COLUMN "send_intent_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "notifications"."notifications" ADD COLUMN "send_intent_message_id" varchar(255);