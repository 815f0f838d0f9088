CREATE TABLE "platform"."dead_letter_replays" (
	"dead_letter_id" varchar(300) PRIMARY KEY NOT NULL,
	"replayed_at" timestamp with time zone NOT NULL,
	"actor" varchar(100) NOT NULL
);
