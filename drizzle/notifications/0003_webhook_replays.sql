CREATE TABLE "notifications"."webhook_replays" (
	"provider" varchar(50) NOT NULL,
	"signature_hash" char(64) NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "webhook_replays_provider_signature_hash_pk" PRIMARY KEY("provider","signature_hash")
);
--> statement-breakpoint
CREATE INDEX "ix_webhook_replays_expires" ON "notifications"."webhook_replays" USING btree ("expires_at");