-- When each token last authenticated a request, for `crm-server token list`:
-- an operator audits which tokens are still in use before revoking the rest.
-- The server writes it at most once a minute per token and process
-- (impl/auth.go), so it is exact to about a minute; NULL: never used since
-- this migration.
ALTER TABLE tokens ADD COLUMN last_used_at timestamptz;
