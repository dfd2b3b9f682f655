-- Mail delivery and receiving: the outbox's leases and the message as it will go
-- out, de-duplication of received messages, and each mailbox's IMAP position.

-- A queued message carries its whole MIME text (raw_message) from the moment
-- POST /mail/send accepts it, so every attempt sends the same bytes (the same
-- Date and Message-ID); it is cleared once the message is sent. A worker
-- delivering a message holds a lease on it: delivery_state 'sending',
-- lease_until in the future and its own lease_id. A message whose lease ran
-- out (its process died) is claimed again; lease_id stops the first worker from
-- recording an outcome after that.
ALTER TABLE mail_messages
    ADD COLUMN raw_message bytea,
    ADD COLUMN lease_id    bigint,
    ADD COLUMN lease_until timestamptz,
    ADD COLUMN sent_at     timestamptz;
-- A constraint in an ALTER TABLE of its own: Citus refuses ADD COLUMN and ADD
-- CONSTRAINT in one statement on a distributed table.
ALTER TABLE mail_messages
    ADD CONSTRAINT mail_messages_sending_lease CHECK (delivery_state IS DISTINCT FROM 'sending' OR lease_until IS NOT NULL);
CREATE INDEX mail_messages_leases ON mail_messages (lease_until) WHERE delivery_state = 'sending';

-- One copy of a message per mailbox and folder: the IMAP poller inserts with
-- ON CONFLICT DO NOTHING, so a message fetched twice (after a dropped connection
-- or a UIDVALIDITY change) is stored once. A message a user sends to their own
-- mailbox has one copy in sent and one in inbox.
CREATE UNIQUE INDEX mail_messages_message_id ON mail_messages (account_id, mail_account_id, folder, message_id)
    WHERE message_id <> '';

-- The IMAP position of each mailbox: messages of INBOX with a UID above
-- imap_last_uid are new while its UIDVALIDITY stays imap_uidvalidity. A poller
-- holds a lease on the mailbox while it polls (imap_lease_until), so that two
-- processes do not poll one mailbox at once.
ALTER TABLE mail_accounts
    ADD COLUMN imap_uidvalidity  bigint,
    ADD COLUMN imap_last_uid     bigint NOT NULL DEFAULT 0,
    ADD COLUMN imap_next_poll_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN imap_lease_until  timestamptz,
    ADD COLUMN imap_polled_at    timestamptz,
    ADD COLUMN imap_failures     integer NOT NULL DEFAULT 0,
    ADD COLUMN imap_last_error   text NOT NULL DEFAULT '';
CREATE INDEX mail_accounts_imap_due ON mail_accounts (imap_next_poll_at)
    WHERE active AND imap_host <> '' AND imap_login <> '' AND imap_secret IS NOT NULL;
