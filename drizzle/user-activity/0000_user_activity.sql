CREATE SCHEMA "user_activity";
--> statement-breakpoint
CREATE TABLE "user_activity"."counted_property_object_views" (
	"property_object_view_id" uuid PRIMARY KEY NOT NULL,
	"property_object_id" uuid NOT NULL,
	"counted_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "user_activity"."property_object_view_stats" (
	"property_object_id" uuid PRIMARY KEY NOT NULL,
	"views_count" bigint NOT NULL,
	"total_duration_seconds" bigint NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "chk_property_object_view_stats_nonneg" CHECK ("user_activity"."property_object_view_stats"."views_count" >= 0 and "user_activity"."property_object_view_stats"."total_duration_seconds" >= 0)
);
--> statement-breakpoint
CREATE TABLE "user_activity"."property_object_views" (
	"id" uuid PRIMARY KEY NOT NULL,
	"session_id" uuid NOT NULL,
	"property_object_id" uuid NOT NULL,
	"view_source" varchar(50) NOT NULL,
	"filter_snapshot" jsonb,
	"status" varchar(16) NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"last_activity_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone,
	"duration_seconds" integer,
	CONSTRAINT "chk_property_object_views_status" CHECK ("user_activity"."property_object_views"."status" in ('Active', 'Inactive')),
	CONSTRAINT "chk_property_object_views_duration_nonneg" CHECK ("user_activity"."property_object_views"."duration_seconds" is null or "user_activity"."property_object_views"."duration_seconds" >= 0),
	CONSTRAINT "chk_property_object_views_closed_fields" CHECK (("user_activity"."property_object_views"."status" = 'Active' and "user_activity"."property_object_views"."ended_at" is null and "user_activity"."property_object_views"."duration_seconds" is null)
       or ("user_activity"."property_object_views"."status" = 'Inactive' and "user_activity"."property_object_views"."ended_at" is not null and "user_activity"."property_object_views"."duration_seconds" is not null))
);
--> statement-breakpoint
CREATE TABLE "user_activity"."sessions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"anonymous_id" varchar(100) NOT NULL,
	"user_id" uuid,
	"device_user_agent" varchar(1024),
	"device_ip_address" "inet",
	"status" varchar(16) NOT NULL,
	"end_reason" varchar(16),
	"created_at" timestamp with time zone NOT NULL,
	"last_activity_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone,
	"duration_seconds" integer,
	CONSTRAINT "chk_sessions_status" CHECK ("user_activity"."sessions"."status" in ('Active', 'Inactive')),
	CONSTRAINT "chk_sessions_end_reason" CHECK ("user_activity"."sessions"."end_reason" is null or "user_activity"."sessions"."end_reason" in ('Inactivity', 'Switched')),
	CONSTRAINT "chk_sessions_duration_nonneg" CHECK ("user_activity"."sessions"."duration_seconds" is null or "user_activity"."sessions"."duration_seconds" >= 0),
	CONSTRAINT "chk_sessions_closed_fields" CHECK (("user_activity"."sessions"."status" = 'Active' and "user_activity"."sessions"."ended_at" is null and "user_activity"."sessions"."duration_seconds" is null and "user_activity"."sessions"."end_reason" is null)
       or ("user_activity"."sessions"."status" = 'Inactive' and "user_activity"."sessions"."ended_at" is not null and "user_activity"."sessions"."duration_seconds" is not null and "user_activity"."sessions"."end_reason" is not null))
);
--> statement-breakpoint
ALTER TABLE "user_activity"."property_object_views" ADD CONSTRAINT "property_object_views_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "user_activity"."sessions"("id") ON DELETE restrict ON UPDATE restrict;--> statement-breakpoint
CREATE INDEX "ix_counted_property_object_views_counted_at" ON "user_activity"."counted_property_object_views" USING btree ("counted_at");--> statement-breakpoint
CREATE INDEX "ix_property_object_views_active_last_activity" ON "user_activity"."property_object_views" USING btree ("last_activity_at") WHERE "user_activity"."property_object_views"."status" = 'Active';--> statement-breakpoint
CREATE INDEX "ix_property_object_views_session_id" ON "user_activity"."property_object_views" USING btree ("session_id");--> statement-breakpoint
CREATE INDEX "ix_property_object_views_inactive_ended_at" ON "user_activity"."property_object_views" USING btree ("ended_at") WHERE "user_activity"."property_object_views"."status" = 'Inactive';--> statement-breakpoint
CREATE INDEX "ix_sessions_active_last_activity" ON "user_activity"."sessions" USING btree ("last_activity_at") WHERE "user_activity"."sessions"."status" = 'Active';--> statement-breakpoint
CREATE UNIQUE INDEX "ux_sessions_active_anonymous_id" ON "user_activity"."sessions" USING btree ("anonymous_id") WHERE "user_activity"."sessions"."status" = 'Active';--> statement-breakpoint
CREATE INDEX "ix_sessions_inactive_ended_at" ON "user_activity"."sessions" USING btree ("ended_at") WHERE "user_activity"."sessions"."status" = 'Inactive';