-- GET /contact/list finds contact persons by a part of their full name,
-- case-insensitively (name ILIKE '%…%'). A trigram index turns that into an index
-- scan; btree_gin lets the same GIN index hold account_id, so a search costs by the
-- matches in the caller's account rather than in every account.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE INDEX contacts_name_trgm ON contacts USING gin (account_id, name gin_trgm_ops);
