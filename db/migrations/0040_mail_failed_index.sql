-- The metrics count the mail outbox's messages by delivery state over every
-- account (crm_mail_outbox_messages, impl/metrics.go). Queued and sending
-- messages have partial indexes already (mail_messages_outbox,
-- mail_messages_leases); this one lets the failed ones be counted without
-- reading all mail. Failed messages stay, but they are few beside the rest.
-- The build reads mail_messages once and holds its writes meanwhile; on a big
-- table build it first with CREATE INDEX CONCURRENTLY under the same name.

CREATE INDEX IF NOT EXISTS mail_messages_failed ON mail_messages (account_id, id) WHERE delivery_state = 'failed';
