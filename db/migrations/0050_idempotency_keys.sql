-- Idempotency keys (openapi.yaml, info.description, "Idempotency"): the reply
-- of each write made with an Idempotency-Key, written in the transaction of
-- the write itself, so that a retry after a lost reply (even one lost because
-- the server died between its commit and the reply) gets the stored reply
-- instead of a second effect. Keys are per account and token: one token never
-- sees another's. request_hash is SHA-256 of the method, path, canonical query
-- and body, to tell a retry from another request under a reused key.
-- Rows older than 24 hours no longer count and are purged per account by the
-- requests that use keys (impl/idempotency.go); created_at leads that purge.
CREATE TABLE idempotency_keys (
    account_id   bigint NOT NULL,
    token_id     bigint NOT NULL,
    key          text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_hash bytea NOT NULL CHECK (length(request_hash) = 32),
    http_status  integer,
    reply        bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, token_id, key),
    CONSTRAINT idempotency_keys_token_fk FOREIGN KEY (account_id, token_id) REFERENCES tokens (account_id, id)
);

CREATE INDEX idempotency_keys_created ON idempotency_keys (account_id, created_at);
