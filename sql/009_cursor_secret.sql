-- The key that signs listing cursors, shared by every replica on this database, so a cursor one
-- server issued is honoured by another and a forged one is refused (gen_random_uuid draws from a
-- strong random source: two give 244 random bits).
INSERT INTO meta (key, value)
VALUES ('cursor_secret', to_jsonb(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')))
ON CONFLICT (key) DO NOTHING;
