ALTER TABLE "identity"."access_fanout_tasks" ADD COLUMN "range_end" uuid;--> statement-breakpoint
ALTER TABLE "identity"."access_fanout_tasks" ADD COLUMN "parent_id" uuid;--> statement-breakpoint
CREATE INDEX "ix_access_fanout_tasks_parent_id" ON "identity"."access_fanout_tasks" USING btree ("parent_id");