-- The realtime outbox and the event stream (realtime_outbox, realtime_events, realtime_event_horizon,
-- realtime_event_position) now belong to the kernel's push part: drizzle/push/0000 moves them, with
-- their rows, into schema push. Nothing runs here; this step only records that they left this part's
-- schema files (its snapshot), so a later db:generate of this part does not drop them.
SELECT 1;
