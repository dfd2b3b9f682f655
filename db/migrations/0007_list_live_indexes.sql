-- Lists show only live (not deleted) counterparties, and every access level but
-- admin filters on the responsible user. Partial indexes of the live rows that
-- also carry user_id let a list's page come from an index-only scan in the sort
-- order, without visiting the table to check deleted_at or user_id.

CREATE INDEX companies_live ON companies (account_id, id) INCLUDE (user_id) WHERE deleted_at IS NULL;

DROP INDEX companies_user;
CREATE INDEX companies_user ON companies (account_id, user_id, id) WHERE deleted_at IS NULL;

DROP INDEX companies_name;
CREATE INDEX companies_name ON companies (account_id, name, id) INCLUDE (user_id) WHERE deleted_at IS NULL;

DROP INDEX companies_created;
CREATE INDEX companies_created ON companies (account_id, created_at, id) INCLUDE (user_id) WHERE deleted_at IS NULL;

DROP INDEX companies_city;
CREATE INDEX companies_city ON companies (account_id, city, id) INCLUDE (user_id) WHERE deleted_at IS NULL;

DROP INDEX companies_type;
CREATE INDEX companies_type ON companies (account_id, type_id, id) INCLUDE (user_id) WHERE deleted_at IS NULL;

DROP INDEX companies_status;
CREATE INDEX companies_status ON companies (account_id, status_id, id) INCLUDE (user_id) WHERE deleted_at IS NULL;
