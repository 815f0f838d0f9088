CREATE EXTENSION IF NOT EXISTS btree_gin;--> statement-breakpoint
ALTER TABLE "messenger"."messages" ADD COLUMN "search_vector" "tsvector" GENERATED ALWAYS AS (to_tsvector('russian'::regconfig, coalesce(body, card_text, file_meta->>'fileName', ''))) STORED;--> statement-breakpoint
CREATE INDEX "ix_messages_search" ON "messenger"."messages" USING gin ("chat_id","search_vector");