-- The chats' membership spans (chat_membership_spans), which the event stream reads to judge who may
-- read a chat event, now belong to the kernel's push part: drizzle/push/0001 moves the table, with its
-- rows, into schema push (the push part applies after this one). Nothing runs here; this step only
-- records that it left this part's schema files (its snapshot), so a later db:generate of this part
-- does not drop it.
SELECT 1;
