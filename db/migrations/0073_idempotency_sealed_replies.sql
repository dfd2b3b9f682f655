-- The stored reply of an idempotent write that returned a secret (a webhook
-- subscription's signing secret) is sealed with the server's CRM_SECRET_KEY,
-- as the secret itself is in webhooks.secret, so that no secret the API
-- returned is readable in the database; a replay opens it
-- (impl/idempotency.go). reply_sealed tells such a reply from a plain one.
ALTER TABLE idempotency_keys ADD COLUMN reply_sealed boolean NOT NULL DEFAULT false;
