-- Indexes of the dashboards (GET /dashboard/...). Each counter of a dashboard reads
-- ranges of one of these indexes: the account, then the responsible user where the
-- counter is per user (a dashboard reads one range per visible user), then the date
-- that places a record in a period (openapi.yaml, the dashboard operations), with the
-- columns the counter needs included, so that the counters are index-only scans.
-- A task's deadline is its date_finish, or its date_start when it has none; the
-- indexes on it include both columns, without which PostgreSQL does not read an
-- expression index alone.

-- Counterparties added in a period; those of the controlled types (forgotten companies).
CREATE INDEX dash_companies_user_created ON companies (account_id, user_id, created_at) WHERE deleted_at IS NULL;
CREATE INDEX dash_companies_type ON companies (account_id, type_id, user_id) INCLUDE (id) WHERE deleted_at IS NULL;

-- Tasks of the whole account scheduled in a period (by deadline), done in a period
-- (by completion time), and unfinished (overdue before a day; planned from a day on).
CREATE INDEX dash_tasks_deadline ON tasks (account_id, (coalesce(date_finish, date_start)))
    INCLUDE (user_id, assigner_id, type_id, status_id, date_start, date_finish);
CREATE INDEX dash_tasks_done ON tasks (account_id, done_at) INCLUDE (user_id, assigner_id, type_id)
    WHERE done_at IS NOT NULL;
CREATE INDEX dash_tasks_open ON tasks (account_id, (coalesce(date_finish, date_start)))
    INCLUDE (user_id, assigner_id, company_id, date_start, date_finish) WHERE status_id = 1;
-- Tasks of one user: done in a period (KPI); unfinished as assignee and as assigner.
CREATE INDEX dash_tasks_user_done ON tasks (account_id, user_id, done_at) WHERE done_at IS NOT NULL;
CREATE INDEX dash_tasks_open_user ON tasks (account_id, user_id, (coalesce(date_finish, date_start)))
    INCLUDE (id, assigner_id, date_start, date_finish) WHERE status_id = 1;
CREATE INDEX dash_tasks_open_assigner ON tasks (account_id, assigner_id, (coalesce(date_finish, date_start)))
    INCLUDE (id, user_id, date_start, date_finish) WHERE status_id = 1;

-- Deals created, documents (invoices) and money movements (not transfers) of a user in a period.
CREATE INDEX dash_deals_user_created ON deals (account_id, user_id, created_at) INCLUDE (sum);
CREATE INDEX dash_documents_user_date ON documents (account_id, user_id, date) INCLUDE (type_id, sum);
CREATE INDEX dash_money_user_date ON money_movements (account_id, user_id, date) INCLUDE (direction, sum)
    WHERE NOT is_transfer;
