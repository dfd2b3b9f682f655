-- Webhook subscriptions and their delivery log.
--
-- A subscription reads the account's event feed (journal positions, 0030) in
-- order: position is the last event it has handled (delivered, or not one it
-- wants), so the outbox of a subscription is the journal past its position,
-- durable with the changes themselves and written by no request. A worker
-- delivering for a subscription holds a lease on it (lease_id, lease_until,
-- renewed after each delivery), so that one process at a time delivers its
-- events; a lease that runs out (the process died) lets another take over
-- from position, and the event under way is delivered again with the same
-- webhook-id. attempts and failing_since count the failures of the event
-- after position; next_attempt_at is when it is tried next.
CREATE TABLE webhooks (
    account_id      bigint NOT NULL REFERENCES accounts (id),
    id              bigint GENERATED ALWAYS AS IDENTITY,
    url             text NOT NULL CHECK (url <> ''),
    modules         smallint[] NOT NULL DEFAULT '{}', -- empty: every module
    actions         text[] NOT NULL DEFAULT '{}',     -- empty: every action
    description     text NOT NULL DEFAULT '',
    secret          bytea NOT NULL,                   -- sealed with CRM_SECRET_KEY
    active          boolean NOT NULL DEFAULT true,
    disabled_reason text NOT NULL DEFAULT '',
    disabled_at     timestamptz,
    position        bigint NOT NULL CHECK (position >= 0),
    attempts        integer NOT NULL DEFAULT 0,
    failing_since   timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    lease_id        bigint,
    lease_until     timestamptz,
    created_by      bigint,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT webhooks_created_by_fk FOREIGN KEY (account_id, created_by) REFERENCES users (account_id, id)
);
-- The scheduling scan: active subscriptions whose next attempt is due.
CREATE INDEX webhooks_due ON webhooks (next_attempt_at) WHERE active;

-- One row per delivery attempt (and test delivery); the worker removes a
-- subscription's rows older than 30 days when it claims the subscription.
CREATE TABLE webhook_deliveries (
    account_id  bigint NOT NULL,
    id          bigint GENERATED ALWAYS AS IDENTITY,
    webhook_id  bigint NOT NULL,
    event_id    bigint,        -- the journal row; NULL for a test delivery
    type        text NOT NULL,
    attempt     integer NOT NULL CHECK (attempt >= 1),
    outcome     text NOT NULL CHECK (outcome IN ('delivered', 'failed', 'test', 'test_failed')),
    status_code integer,
    error       text NOT NULL DEFAULT '',
    duration_ms integer NOT NULL CHECK (duration_ms >= 0),
    at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT webhook_deliveries_webhook_fk FOREIGN KEY (account_id, webhook_id) REFERENCES webhooks (account_id, id) ON DELETE CASCADE
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (account_id, webhook_id, id);
