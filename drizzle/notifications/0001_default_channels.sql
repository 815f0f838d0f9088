-- The channel configs every deployment starts with. In-app is real and on; the external channels
-- wait for an operator to configure their provider and enable them (PUT /api/notifications/channels/{channel});
-- until then their notifications wait (seed A3). Telegram, Max, WhatsApp and Viber have no adapter yet.
INSERT INTO "notifications"."channel_configs"
  ("channel", "is_enabled", "provider_key", "max_attempts", "retry_backoff", "backoff_initial_seconds", "backoff_max_seconds", "backoff_multiplier")
VALUES
  ('InApp',    true,  'hub',       3, 'Fixed',       10,   10, 1),
  ('Email',    false, 'smtp',      5, 'Exponential', 60, 3600, 2),
  ('Sms',      false, 'http-sms',  5, 'Exponential', 60, 3600, 2),
  ('Push',     false, 'http-push', 5, 'Exponential', 60, 3600, 2),
  ('Telegram', false, 'telegram',  5, 'Exponential', 60, 3600, 2),
  ('Max',      false, 'max',       5, 'Exponential', 60, 3600, 2),
  ('WhatsApp', false, 'whatsapp',  5, 'Exponential', 60, 3600, 2),
  ('Viber',    false, 'viber',     5, 'Exponential', 60, 3600, 2)
ON CONFLICT ("channel") DO NOTHING;
