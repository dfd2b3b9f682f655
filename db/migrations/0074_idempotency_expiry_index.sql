-- crm:no-transaction
-- The background purge of expired idempotency keys of every account
-- (impl/idempotency.go, PurgeIdempotencyKeys) reads the oldest keys first:
-- by created_at alone, since it crosses accounts. Built without locking
-- writes (the marker above), as the table takes a row per keyed write.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idempotency_keys_expiry ON idempotency_keys (created_at);
