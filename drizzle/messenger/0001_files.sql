CREATE TABLE "messenger"."files" (
	"id" uuid PRIMARY KEY NOT NULL,
	"chat_id" uuid NOT NULL,
	"uploader_user_id" uuid NOT NULL,
	"object_key" text NOT NULL,
	"file_name" text NOT NULL,
	"content_type" varchar(255) NOT NULL,
	"declared_size" bigint NOT NULL,
	"size" bigint,
	"status" varchar(16) NOT NULL,
	"reject_reason" text,
	"created_at" timestamp with time zone NOT NULL,
	"upload_expires_at" timestamp with time zone NOT NULL,
	"confirmed_at" timestamp with time zone,
	"sent_at" timestamp with time zone,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ck_files_status" CHECK ("messenger"."files"."status" in ('Pending', 'Quarantined', 'Ready', 'Rejected', 'Expired')),
	CONSTRAINT "ck_files_sizes" CHECK ("messenger"."files"."declared_size" >= 0 and ("messenger"."files"."size" is null or "messenger"."files"."size" >= 0))
);
--> statement-breakpoint
CREATE INDEX "ix_files_unsent" ON "messenger"."files" USING btree ("created_at") WHERE "messenger"."files"."sent_at" is null;--> statement-breakpoint
CREATE INDEX "ix_files_quarantined" ON "messenger"."files" USING btree ("id") WHERE "messenger"."files"."status" = 'Quarantined';