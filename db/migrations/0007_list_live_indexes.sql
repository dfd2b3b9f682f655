-- crm:no-transaction
-- Lists show only live (not deleted) counterparties, and every access level but
-- admin filters on the responsible user. Partial indexes of the live rows that
-- also carry user_id let a list's page come from an index-only scan in the sort
-- order, without visiting the table to check deleted_at or user_id.
--
-- Applied outside a transaction (the marker above), each index built with
-- CONCURRENTLY, so that writes to companies go on while it builds. Written to
-- be run again after a failure part-way: a rebuilt index is dropped and built
-- once more, and the runner drops an INVALID leftover of a failed build before
-- rerunning. Databases that applied the earlier, locking, text of this file
-- have the same indexes and do not run it again (migrations are recorded by
-- version).

CREATE INDEX CONCURRENTLY IF NOT EXISTS companies_live ON companies (account_id, id) INCLUDE (user_id) WHERE deleted_at IS NULL;

DROP INDEX CONCURRENTLY IF EXISTS companies_user;
CREATE INDEX CONCURRENTLY IF NOT EXISTS companies_user ON companies (account_id, user_id, id) WHERE deleted_at IS NULL;

DROP INDEX CONCURRENTLY IF EXISTS companies_name;
CREATE INDEX CONCURRENTLY IF NOT EXISTS companies_name ON companies (account_id, name, id) INCLUDE (user_id) WHERE deleted_at IS NULL;

DROP INDEX CONCURRENTLY IF EXISTS companies_created;
CREATE INDEX CONCURRENTLY IF NOT EXISTS companies_created ON companies (account_id, created_at, id) INCLUDE (user_id) WHERE deleted_at IS NULL;

DROP INDEX CONCURRENTLY IF EXISTS companies_city;
CREATE INDEX CONCURRENTLY IF NOT EXISTS companies_city ON companies (account_id, city, id) INCLUDE (user_id) WHERE deleted_at IS NULL;

DROP INDEX CONCURRENTLY IF EXISTS companies_type;
CREATE INDEX CONCURRENTLY IF NOT EXISTS companies_type ON companies (account_id, type_id, id) INCLUDE (user_id) WHERE deleted_at IS NULL;

DROP INDEX CONCURRENTLY IF EXISTS companies_status;
CREATE INDEX CONCURRENTLY IF NOT EXISTS companies_status ON companies (account_id, status_id, id) INCLUDE (user_id) WHERE deleted_at IS NULL;
