CREATE TABLE "platform"."job_leases" (
	"name" varchar(200) PRIMARY KEY NOT NULL,
	"holder" varchar(200) NOT NULL,
	"backend_pid" integer NOT NULL,
	"token" bigint NOT NULL,
	"acquired_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
