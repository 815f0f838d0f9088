CREATE SCHEMA "identity";
--> statement-breakpoint
CREATE TABLE "identity"."access_fanout_tasks" (
	"id" uuid PRIMARY KEY NOT NULL,
	"role_id" uuid NOT NULL,
	"company_id" uuid,
	"role_version" bigint NOT NULL,
	"reason" text NOT NULL,
	"status" text DEFAULT 'Pending' NOT NULL,
	"cursor" uuid,
	"processed_count" integer DEFAULT 0 NOT NULL,
	"attempt_count" integer DEFAULT 0 NOT NULL,
	"lease_expires_at" timestamp with time zone,
	"last_error" varchar(512),
	"created_at" timestamp with time zone NOT NULL,
	"started_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ck_access_fanout_tasks_status" CHECK ("identity"."access_fanout_tasks"."status" in ('Pending', 'InProgress', 'Completed', 'Failed')),
	CONSTRAINT "ck_access_fanout_tasks_reason" CHECK ("identity"."access_fanout_tasks"."reason" in ('RolePermissionsChanged')),
	CONSTRAINT "ck_access_fanout_tasks_role_version" CHECK ("identity"."access_fanout_tasks"."role_version" >= 1),
	CONSTRAINT "ck_access_fanout_tasks_processed_count" CHECK ("identity"."access_fanout_tasks"."processed_count" >= 0),
	CONSTRAINT "ck_access_fanout_tasks_attempt_count" CHECK ("identity"."access_fanout_tasks"."attempt_count" >= 0)
);
--> statement-breakpoint
CREATE TABLE "identity"."role_assignments" (
	"id" uuid PRIMARY KEY NOT NULL,
	"role_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"scope_type" text NOT NULL,
	"scope_organization_id" uuid,
	"scope_project_group_id" uuid,
	"scope_project_id" uuid,
	"status" text DEFAULT 'Active' NOT NULL,
	"expires_at" timestamp with time zone,
	"version" bigint DEFAULT 1 NOT NULL,
	"granted_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone,
	"expired_at" timestamp with time zone,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ck_role_assignments_status" CHECK ("identity"."role_assignments"."status" in ('Active', 'Revoked', 'Expired')),
	CONSTRAINT "ck_role_assignments_version" CHECK ("identity"."role_assignments"."version" >= 1),
	CONSTRAINT "ck_role_assignments_scope" CHECK (("identity"."role_assignments"."scope_type" = 'Platform' and "identity"."role_assignments"."scope_organization_id" is null and "identity"."role_assignments"."scope_project_group_id" is null and "identity"."role_assignments"."scope_project_id" is null)
       or ("identity"."role_assignments"."scope_type" = 'Organization' and "identity"."role_assignments"."scope_organization_id" is not null and "identity"."role_assignments"."scope_project_group_id" is null and "identity"."role_assignments"."scope_project_id" is null)
       or ("identity"."role_assignments"."scope_type" = 'ProjectGroup' and "identity"."role_assignments"."scope_organization_id" is null and "identity"."role_assignments"."scope_project_group_id" is not null and "identity"."role_assignments"."scope_project_id" is null)
       or ("identity"."role_assignments"."scope_type" = 'Project' and "identity"."role_assignments"."scope_organization_id" is null and "identity"."role_assignments"."scope_project_group_id" is null and "identity"."role_assignments"."scope_project_id" is not null))
);
--> statement-breakpoint
CREATE TABLE "identity"."role_definitions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"code" varchar(100) NOT NULL,
	"name" varchar(200) NOT NULL,
	"company_id" uuid,
	"status" text DEFAULT 'Active' NOT NULL,
	"version" bigint DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"archived_at" timestamp with time zone,
	CONSTRAINT "ux_role_definitions_company_code" UNIQUE NULLS NOT DISTINCT("company_id","code"),
	CONSTRAINT "ck_role_definitions_status" CHECK ("identity"."role_definitions"."status" in ('Active', 'Archived')),
	CONSTRAINT "ck_role_definitions_version" CHECK ("identity"."role_definitions"."version" >= 1)
);
--> statement-breakpoint
CREATE TABLE "identity"."role_permissions" (
	"role_id" uuid NOT NULL,
	"permission_code" varchar(150) NOT NULL,
	"granted_at" timestamp with time zone NOT NULL,
	CONSTRAINT "pk_role_permissions" PRIMARY KEY("role_id","permission_code")
);
--> statement-breakpoint
CREATE TABLE "identity"."users" (
	"id" uuid PRIMARY KEY NOT NULL,
	"first_name" varchar(128) NOT NULL,
	"middle_name" varchar(128),
	"last_name" varchar(128) NOT NULL,
	"phone_number" varchar(16) NOT NULL,
	"status" text NOT NULL,
	"type" text NOT NULL,
	"company_id" uuid,
	"version" bigint DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ux_users_phone_number" UNIQUE("phone_number"),
	CONSTRAINT "ck_users_status" CHECK ("identity"."users"."status" in ('Invited', 'Active', 'Blocked', 'Archived')),
	CONSTRAINT "ck_users_type" CHECK ("identity"."users"."type" in ('Investor', 'CompanyEmployee', 'PlatformStaff')),
	CONSTRAINT "ck_users_phone_e164" CHECK ("identity"."users"."phone_number" ~ '^\+[1-9][0-9]{6,14}$'),
	CONSTRAINT "ck_users_version" CHECK ("identity"."users"."version" >= 1)
);
--> statement-breakpoint
ALTER TABLE "identity"."access_fanout_tasks" ADD CONSTRAINT "access_fanout_tasks_role_id_role_definitions_id_fk" FOREIGN KEY ("role_id") REFERENCES "identity"."role_definitions"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identity"."role_assignments" ADD CONSTRAINT "role_assignments_role_id_role_definitions_id_fk" FOREIGN KEY ("role_id") REFERENCES "identity"."role_definitions"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identity"."role_assignments" ADD CONSTRAINT "role_assignments_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "identity"."users"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identity"."role_permissions" ADD CONSTRAINT "role_permissions_role_id_role_definitions_id_fk" FOREIGN KEY ("role_id") REFERENCES "identity"."role_definitions"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "ix_access_fanout_tasks_role_id" ON "identity"."access_fanout_tasks" USING btree ("role_id");--> statement-breakpoint
CREATE INDEX "ix_access_fanout_tasks_company_id" ON "identity"."access_fanout_tasks" USING btree ("company_id");--> statement-breakpoint
CREATE INDEX "ix_access_fanout_tasks_pending" ON "identity"."access_fanout_tasks" USING btree ("created_at","id") WHERE "identity"."access_fanout_tasks"."status" in ('Pending', 'InProgress');--> statement-breakpoint
CREATE INDEX "ix_access_fanout_tasks_status_created" ON "identity"."access_fanout_tasks" USING btree ("status","created_at");--> statement-breakpoint
CREATE INDEX "ix_role_assignments_role_user_active" ON "identity"."role_assignments" USING btree ("role_id","user_id") WHERE "identity"."role_assignments"."status" = 'Active';--> statement-breakpoint
CREATE INDEX "ix_role_assignments_user_active" ON "identity"."role_assignments" USING btree ("user_id") WHERE "identity"."role_assignments"."status" = 'Active';--> statement-breakpoint
CREATE INDEX "ix_role_assignments_user_id" ON "identity"."role_assignments" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "ix_role_assignments_expires_at" ON "identity"."role_assignments" USING btree ("expires_at") WHERE "identity"."role_assignments"."status" = 'Active' and "identity"."role_assignments"."expires_at" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "ux_role_assignments_active_scope" ON "identity"."role_assignments" USING btree ("role_id","user_id","scope_type",coalesce("scope_organization_id", "scope_project_group_id", "scope_project_id", '00000000-0000-0000-0000-000000000000'::uuid)) WHERE "identity"."role_assignments"."status" = 'Active';--> statement-breakpoint
CREATE INDEX "ix_users_company_id" ON "identity"."users" USING btree ("company_id");