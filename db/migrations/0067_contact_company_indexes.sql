-- crm:no-transaction
-- Indexes of migrations 0065 and 0066, built without locking writes: applied
-- outside a transaction (the marker above), each with CONCURRENTLY, so that
-- phones, e-mails and counterparties take writes while they build. A database
-- that applied 0065 and 0066 before they moved here has them already, and
-- IF NOT EXISTS finds them; the runner drops an INVALID leftover of a failed
-- build before running this file again.

-- A contact person's phones and e-mails (migration 0065): only the items of
-- contact persons; the counterparty's own items (contact_id NULL, most of them)
-- are reached through phones_company and emails_company, and every statement
-- that reads a contact's items says contact_id = something, which implies the
-- predicate.
CREATE INDEX CONCURRENTLY IF NOT EXISTS phones_contact ON phones (account_id, contact_id) WHERE contact_id IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS emails_contact ON emails (account_id, contact_id) WHERE contact_id IS NOT NULL;

-- The name filter of the counterparty list (migration 0066).
CREATE INDEX CONCURRENTLY IF NOT EXISTS company_names_trgm ON company_names USING gin (account_id, name_lc gin_trgm_ops);
