-- The spans of chat membership the event stream reads (who may read a ChatGroup event) move from the
-- messenger's schema into push's, so no statement of the push part names a module's table: the
-- messenger writes them through push's writer (src/platform/push/spans-sql.ts). This part applies
-- after every module's part (migrationParts), so on a fresh database as on an old one the table
-- exists by now. ALTER ... SET SCHEMA keeps every row, the primary key, the index and the check.
ALTER TABLE "messenger"."chat_membership_spans" SET SCHEMA "push";
