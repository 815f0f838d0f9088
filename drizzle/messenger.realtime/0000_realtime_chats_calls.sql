CREATE SCHEMA IF NOT EXISTS "messenger";
--> statement-breakpoint
CREATE TABLE "messenger"."blacklist_entries" (
	"id" uuid PRIMARY KEY NOT NULL,
	"owner_user_id" uuid NOT NULL,
	"blocked_user_id" uuid NOT NULL,
	"status" varchar(10) NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ck_blacklist_status" CHECK ("messenger"."blacklist_entries"."status" in ('Blocked', 'Unblocked')),
	CONSTRAINT "ck_blacklist_not_self" CHECK ("messenger"."blacklist_entries"."owner_user_id" <> "messenger"."blacklist_entries"."blocked_user_id")
);
--> statement-breakpoint
CREATE TABLE "messenger"."call_recordings" (
	"id" uuid PRIMARY KEY NOT NULL,
	"session_id" uuid NOT NULL,
	"started_by_user_id" uuid NOT NULL,
	"status" varchar(10) NOT NULL,
	"error_code" varchar(64),
	"started_at" timestamp with time zone NOT NULL,
	"stopped_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ck_call_recordings_status" CHECK ("messenger"."call_recordings"."status" in ('Recording', 'Stopped', 'Available', 'Failed'))
);
--> statement-breakpoint
CREATE TABLE "messenger"."chat_events" (
	"id" uuid PRIMARY KEY NOT NULL,
	"chat_id" uuid NOT NULL,
	"kind" varchar(24) NOT NULL,
	"actor_user_id" uuid NOT NULL,
	"subject_user_id" uuid,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ck_chat_events_kind" CHECK ("messenger"."chat_events"."kind" in ('Created', 'Renamed', 'ParticipantAdded', 'ParticipantRemoved'))
);
--> statement-breakpoint
CREATE TABLE "messenger"."chat_participants" (
	"id" uuid PRIMARY KEY NOT NULL,
	"chat_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"role" varchar(8) NOT NULL,
	"status" varchar(8) NOT NULL,
	"last_read_seq" bigint DEFAULT 0 NOT NULL,
	"joined_at" timestamp with time zone NOT NULL,
	"removed_at" timestamp with time zone,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ck_chat_participants_role" CHECK ("messenger"."chat_participants"."role" in ('Owner', 'Member')),
	CONSTRAINT "ck_chat_participants_status" CHECK ("messenger"."chat_participants"."status" in ('Active', 'Removed'))
);
--> statement-breakpoint
CREATE TABLE "messenger"."chats" (
	"id" uuid PRIMARY KEY NOT NULL,
	"kind" varchar(8) NOT NULL,
	"title" varchar(200),
	"direct_key" varchar(73),
	"created_by_user_id" uuid NOT NULL,
	"last_seq" bigint DEFAULT 0 NOT NULL,
	"membership_version" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ck_chats_kind" CHECK ("messenger"."chats"."kind" in ('Direct', 'Group')),
	CONSTRAINT "ck_chats_direct_key" CHECK (("messenger"."chats"."kind" = 'Direct') = ("messenger"."chats"."direct_key" is not null)),
	CONSTRAINT "ck_chats_last_seq" CHECK ("messenger"."chats"."last_seq" >= 0)
);
--> statement-breakpoint
CREATE TABLE "messenger"."contacts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"requester_user_id" uuid NOT NULL,
	"addressee_user_id" uuid NOT NULL,
	"status" varchar(10) NOT NULL,
	"removed_by_user_id" uuid,
	"created_at" timestamp with time zone NOT NULL,
	"accepted_at" timestamp with time zone,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ck_contacts_status" CHECK ("messenger"."contacts"."status" in ('Pending', 'Accepted', 'Removed')),
	CONSTRAINT "ck_contacts_not_self" CHECK ("messenger"."contacts"."requester_user_id" <> "messenger"."contacts"."addressee_user_id")
);
--> statement-breakpoint
CREATE TABLE "messenger"."media_session_participants" (
	"id" uuid PRIMARY KEY NOT NULL,
	"session_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"status" varchar(8) NOT NULL,
	"screen_sharing" boolean DEFAULT false NOT NULL,
	"invited_at" timestamp with time zone,
	"joined_at" timestamp with time zone,
	"left_at" timestamp with time zone,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ck_media_session_participants_status" CHECK ("messenger"."media_session_participants"."status" in ('Invited', 'Joined', 'Left'))
);
--> statement-breakpoint
CREATE TABLE "messenger"."media_sessions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"session_kind" varchar(12) NOT NULL,
	"chat_id" uuid,
	"initiator_user_id" uuid NOT NULL,
	"callee_user_id" uuid,
	"media" varchar(8) NOT NULL,
	"status" varchar(12) NOT NULL,
	"room_name" varchar(64) NOT NULL,
	"ring_expires_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"answered_at" timestamp with time zone,
	"ended_at" timestamp with time zone,
	"ended_by_user_id" uuid,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "ck_media_sessions_kind" CHECK ("messenger"."media_sessions"."session_kind" in ('Direct', 'Conference')),
	CONSTRAINT "ck_media_sessions_media" CHECK ("messenger"."media_sessions"."media" in ('Audio', 'Video')),
	CONSTRAINT "ck_media_sessions_status" CHECK ("messenger"."media_sessions"."status" in ('Ringing', 'Active', 'Declined', 'Cancelled', 'Missed', 'Ended')),
	CONSTRAINT "ck_media_sessions_shape" CHECK (("messenger"."media_sessions"."session_kind" = 'Direct' and "messenger"."media_sessions"."callee_user_id" is not null) or ("messenger"."media_sessions"."session_kind" = 'Conference' and "messenger"."media_sessions"."chat_id" is not null))
);
--> statement-breakpoint
CREATE TABLE "messenger"."messages" (
	"id" uuid PRIMARY KEY NOT NULL,
	"chat_id" uuid NOT NULL,
	"seq" bigint NOT NULL,
	"sender_user_id" uuid NOT NULL,
	"kind" varchar(8) NOT NULL,
	"body" text,
	"file_meta" jsonb,
	"card_text" text,
	"sent_at" timestamp with time zone NOT NULL,
	"edited_at" timestamp with time zone,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "ck_messages_kind" CHECK ("messenger"."messages"."kind" in ('Text', 'File', 'Card')),
	CONSTRAINT "ck_messages_seq" CHECK ("messenger"."messages"."seq" >= 1)
);
--> statement-breakpoint
CREATE TABLE "messenger"."realtime_outbox" (
	"id" uuid PRIMARY KEY NOT NULL,
	"kind" varchar(32) NOT NULL,
	"target_kind" varchar(16) NOT NULL,
	"chat_id" uuid,
	"target_user_id" uuid,
	"message_id" uuid,
	"ref_id" uuid,
	"session_kind" varchar(12),
	"seq" bigint,
	"status" varchar(16) DEFAULT 'Pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone NOT NULL,
	"last_error" varchar(512),
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"row_version" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "ck_rto_kind" CHECK ("messenger"."realtime_outbox"."kind" in ('MessageReceived', 'MessageEdited', 'MessageDeleted', 'ReadReceiptUpdated', 'ChatUpdated', 'ContactRequestReceived', 'ContactRequestAccepted', 'ContactRemoved', 'CallInvited', 'CallAnswered', 'CallDeclined', 'CallMissed', 'CallCancelled', 'CallEnded', 'ConferenceInvited', 'ConferenceStarted', 'ConferenceEnded', 'ConferenceParticipantJoined', 'ConferenceParticipantLeft', 'RecordingStarted', 'RecordingStopped', 'RecordingAvailable', 'RecordingFailed', 'ScreenShareStarted', 'ScreenShareStopped', 'BlacklistChanged')),
	CONSTRAINT "ck_rto_target_kind" CHECK ("messenger"."realtime_outbox"."target_kind" in ('ChatGroup', 'User')),
	CONSTRAINT "ck_rto_status" CHECK ("messenger"."realtime_outbox"."status" in ('Pending', 'Done', 'Quarantined')),
	CONSTRAINT "ck_rto_session_kind" CHECK ("messenger"."realtime_outbox"."session_kind" is null or "messenger"."realtime_outbox"."session_kind" in ('Direct', 'Conference')),
	CONSTRAINT "ck_rto_attempts" CHECK ("messenger"."realtime_outbox"."attempts" >= 0),
	CONSTRAINT "ck_rto_target" CHECK (("messenger"."realtime_outbox"."target_kind" = 'ChatGroup' and "messenger"."realtime_outbox"."chat_id" is not null) or ("messenger"."realtime_outbox"."target_kind" = 'User' and "messenger"."realtime_outbox"."target_user_id" is not null))
);
--> statement-breakpoint
ALTER TABLE "messenger"."call_recordings" ADD CONSTRAINT "call_recordings_session_id_media_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "messenger"."media_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messenger"."chat_events" ADD CONSTRAINT "chat_events_chat_id_chats_id_fk" FOREIGN KEY ("chat_id") REFERENCES "messenger"."chats"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messenger"."chat_participants" ADD CONSTRAINT "chat_participants_chat_id_chats_id_fk" FOREIGN KEY ("chat_id") REFERENCES "messenger"."chats"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messenger"."media_session_participants" ADD CONSTRAINT "media_session_participants_session_id_media_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "messenger"."media_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messenger"."media_sessions" ADD CONSTRAINT "media_sessions_chat_id_chats_id_fk" FOREIGN KEY ("chat_id") REFERENCES "messenger"."chats"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messenger"."messages" ADD CONSTRAINT "messages_chat_id_chats_id_fk" FOREIGN KEY ("chat_id") REFERENCES "messenger"."chats"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "ux_blacklist_owner_blocked" ON "messenger"."blacklist_entries" USING btree ("owner_user_id","blocked_user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "ux_call_recordings_running" ON "messenger"."call_recordings" USING btree ("session_id") WHERE "messenger"."call_recordings"."status" = 'Recording';--> statement-breakpoint
CREATE INDEX "ix_chat_events_chat" ON "messenger"."chat_events" USING btree ("chat_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "ux_chat_participants_chat_user" ON "messenger"."chat_participants" USING btree ("chat_id","user_id");--> statement-breakpoint
CREATE INDEX "ix_chat_participants_user_active" ON "messenger"."chat_participants" USING btree ("user_id") WHERE "messenger"."chat_participants"."status" = 'Active';--> statement-breakpoint
CREATE UNIQUE INDEX "ux_chats_direct_key" ON "messenger"."chats" USING btree ("direct_key");--> statement-breakpoint
CREATE UNIQUE INDEX "ux_contacts_pair" ON "messenger"."contacts" USING btree (least("requester_user_id", "addressee_user_id"),greatest("requester_user_id", "addressee_user_id"));--> statement-breakpoint
CREATE INDEX "ix_contacts_addressee" ON "messenger"."contacts" USING btree ("addressee_user_id");--> statement-breakpoint
CREATE INDEX "ix_contacts_requester" ON "messenger"."contacts" USING btree ("requester_user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "ux_media_session_participants_user" ON "messenger"."media_session_participants" USING btree ("session_id","user_id");--> statement-breakpoint
CREATE INDEX "ix_media_sessions_ringing" ON "messenger"."media_sessions" USING btree ("ring_expires_at") WHERE "messenger"."media_sessions"."status" = 'Ringing';--> statement-breakpoint
CREATE UNIQUE INDEX "ux_media_sessions_live_conference" ON "messenger"."media_sessions" USING btree ("chat_id") WHERE "messenger"."media_sessions"."session_kind" = 'Conference' and "messenger"."media_sessions"."status" = 'Active';--> statement-breakpoint
CREATE UNIQUE INDEX "ux_messages_chat_seq" ON "messenger"."messages" USING btree ("chat_id","seq");--> statement-breakpoint
CREATE INDEX "ix_rto_due" ON "messenger"."realtime_outbox" USING btree ("status","next_attempt_at");--> statement-breakpoint
CREATE INDEX "ix_rto_chat" ON "messenger"."realtime_outbox" USING btree ("chat_id");