-- The universal list: exact totals kept by the writing transactions, and the
-- indexes its filters and sorts use. Every index leads with account_id, so a
-- list never reads another account's rows.

CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gin;

-- list_counts holds, per account, module and owner, how many records there are,
-- so that an unfiltered list gets its exact total without counting (an exact
-- count(*) over half a million rows costs ~25 ms of CPU even index-only).
-- owner_id is the responsible user (companies, documents, money, deals, the
-- journal's author), the assignee (tasks, kind 0), the assigner of a task
-- assigned to someone else (kind 1), or the mail account (mail).
CREATE TABLE list_counts (
    account_id bigint NOT NULL REFERENCES accounts (id),
    module     smallint NOT NULL,
    kind       smallint NOT NULL DEFAULT 0,
    owner_id   bigint NOT NULL,
    n          bigint NOT NULL,
    PRIMARY KEY (account_id, module, kind, owner_id)
);

-- list_counts_apply adds the deltas (account_id, module, kind, owner_id, d) of one
-- statement. Rows are applied in key order so that concurrent transactions lock
-- counter rows in the same order and never deadlock.
CREATE FUNCTION list_counts_apply(deltas jsonb) RETURNS void LANGUAGE sql AS $$
    INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, n)
    SELECT account_id, module, kind, owner_id, sum(d)
      FROM jsonb_to_recordset(deltas) AS x (account_id bigint, module smallint, kind smallint, owner_id bigint, d bigint)
     GROUP BY account_id, module, kind, owner_id
    HAVING sum(d) <> 0
     ORDER BY account_id, module, kind, owner_id
    ON CONFLICT (account_id, module, kind, owner_id) DO UPDATE SET n = lc.n + excluded.n
$$;

-- One statement-level trigger function per table: it turns the statement's
-- transition tables into +1/-1 deltas of the owners concerned.
CREATE FUNCTION list_counts_companies() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE deltas jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT jsonb_agg(jsonb_build_object('account_id', account_id, 'module', 1, 'kind', 0, 'owner_id', user_id, 'd', 1))
          INTO deltas FROM new_rows WHERE deleted_at IS NULL;
    ELSIF TG_OP = 'UPDATE' THEN
        SELECT jsonb_agg(x) INTO deltas FROM (
            SELECT jsonb_build_object('account_id', account_id, 'module', 1, 'kind', 0, 'owner_id', user_id, 'd', 1) AS x
              FROM new_rows WHERE deleted_at IS NULL
            UNION ALL
            SELECT jsonb_build_object('account_id', account_id, 'module', 1, 'kind', 0, 'owner_id', user_id, 'd', -1)
              FROM old_rows WHERE deleted_at IS NULL) s;
    ELSE
        SELECT jsonb_agg(jsonb_build_object('account_id', account_id, 'module', 1, 'kind', 0, 'owner_id', user_id, 'd', -1))
          INTO deltas FROM old_rows WHERE deleted_at IS NULL;
    END IF;
    IF deltas IS NOT NULL THEN
        PERFORM list_counts_apply(deltas);
    END IF;
    RETURN NULL;
END $$;

-- list_counts_by_user serves the tables whose owner is user_id: documents (4),
-- money movements (5), deals (20) and the journal (50); the module is the
-- trigger's first argument.
CREATE FUNCTION list_counts_by_user() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    deltas jsonb;
    m smallint := TG_ARGV[0]::smallint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT jsonb_agg(jsonb_build_object('account_id', account_id, 'module', m, 'kind', 0, 'owner_id', coalesce(user_id, 0), 'd', 1))
          INTO deltas FROM new_rows;
    ELSIF TG_OP = 'UPDATE' THEN
        SELECT jsonb_agg(x) INTO deltas FROM (
            SELECT jsonb_build_object('account_id', account_id, 'module', m, 'kind', 0, 'owner_id', coalesce(user_id, 0), 'd', 1) AS x FROM new_rows
            UNION ALL
            SELECT jsonb_build_object('account_id', account_id, 'module', m, 'kind', 0, 'owner_id', coalesce(user_id, 0), 'd', -1) FROM old_rows) s;
    ELSE
        SELECT jsonb_agg(jsonb_build_object('account_id', account_id, 'module', m, 'kind', 0, 'owner_id', coalesce(user_id, 0), 'd', -1))
          INTO deltas FROM old_rows;
    END IF;
    IF deltas IS NOT NULL THEN
        PERFORM list_counts_apply(deltas);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION list_counts_tasks() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE deltas jsonb;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        SELECT jsonb_agg(x) INTO deltas FROM (
            SELECT jsonb_build_object('account_id', account_id, 'module', 2, 'kind', 0, 'owner_id', user_id, 'd', 1) AS x FROM new_rows
            UNION ALL
            SELECT jsonb_build_object('account_id', account_id, 'module', 2, 'kind', 1, 'owner_id', assigner_id, 'd', 1)
              FROM new_rows WHERE assigner_id <> user_id) s;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        SELECT coalesce(deltas, '[]') || coalesce(jsonb_agg(x), '[]') INTO deltas FROM (
            SELECT jsonb_build_object('account_id', account_id, 'module', 2, 'kind', 0, 'owner_id', user_id, 'd', -1) AS x FROM old_rows
            UNION ALL
            SELECT jsonb_build_object('account_id', account_id, 'module', 2, 'kind', 1, 'owner_id', assigner_id, 'd', -1)
              FROM old_rows WHERE assigner_id <> user_id) s;
    END IF;
    IF deltas IS NOT NULL THEN
        PERFORM list_counts_apply(deltas);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION list_counts_mail() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE deltas jsonb;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        SELECT jsonb_agg(jsonb_build_object('account_id', account_id, 'module', 24, 'kind', 0, 'owner_id', mail_account_id, 'd', 1))
          INTO deltas FROM new_rows;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        SELECT coalesce(deltas, '[]') || coalesce(jsonb_agg(jsonb_build_object('account_id', account_id, 'module', 24, 'kind', 0,
               'owner_id', mail_account_id, 'd', -1)), '[]')
          INTO deltas FROM old_rows;
    END IF;
    IF deltas IS NOT NULL THEN
        PERFORM list_counts_apply(deltas);
    END IF;
    RETURN NULL;
END $$;

-- Transition tables cannot be combined with UPDATE OF column lists, so the update
-- triggers see every updated row; unchanged owners net to zero.
CREATE TRIGGER list_counts_ins AFTER INSERT ON companies REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_companies();
CREATE TRIGGER list_counts_upd AFTER UPDATE ON companies REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_companies();
CREATE TRIGGER list_counts_del AFTER DELETE ON companies REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_companies();

CREATE TRIGGER list_counts_ins AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_tasks();
CREATE TRIGGER list_counts_upd AFTER UPDATE ON tasks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_tasks();
CREATE TRIGGER list_counts_del AFTER DELETE ON tasks REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_tasks();

CREATE TRIGGER list_counts_ins AFTER INSERT ON documents REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_by_user(4);
CREATE TRIGGER list_counts_upd AFTER UPDATE ON documents REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_by_user(4);
CREATE TRIGGER list_counts_del AFTER DELETE ON documents REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_by_user(4);

CREATE TRIGGER list_counts_ins AFTER INSERT ON money_movements REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_by_user(5);
CREATE TRIGGER list_counts_upd AFTER UPDATE ON money_movements REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_by_user(5);
CREATE TRIGGER list_counts_del AFTER DELETE ON money_movements REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_by_user(5);

CREATE TRIGGER list_counts_ins AFTER INSERT ON deals REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_by_user(20);
CREATE TRIGGER list_counts_upd AFTER UPDATE ON deals REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_by_user(20);
CREATE TRIGGER list_counts_del AFTER DELETE ON deals REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_by_user(20);

CREATE TRIGGER list_counts_ins AFTER INSERT ON mail_messages REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_mail();
CREATE TRIGGER list_counts_upd AFTER UPDATE ON mail_messages REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_mail();
CREATE TRIGGER list_counts_del AFTER DELETE ON mail_messages REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_mail();

-- The journal is only ever inserted into.
CREATE TRIGGER list_counts_ins AFTER INSERT ON journal REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_counts_by_user(50);

-- Counts of the rows that exist already.
INSERT INTO list_counts (account_id, module, kind, owner_id, n)
SELECT account_id, 1, 0, user_id, count(*) FROM companies WHERE deleted_at IS NULL GROUP BY 1, 4
UNION ALL SELECT account_id, 2, 0, user_id, count(*) FROM tasks GROUP BY 1, 4
UNION ALL SELECT account_id, 2, 1, assigner_id, count(*) FROM tasks WHERE assigner_id <> user_id GROUP BY 1, 4
UNION ALL SELECT account_id, 4, 0, user_id, count(*) FROM documents GROUP BY 1, 4
UNION ALL SELECT account_id, 5, 0, user_id, count(*) FROM money_movements GROUP BY 1, 4
UNION ALL SELECT account_id, 20, 0, user_id, count(*) FROM deals GROUP BY 1, 4
UNION ALL SELECT account_id, 24, 0, mail_account_id, count(*) FROM mail_messages GROUP BY 1, 4
UNION ALL SELECT account_id, 50, 0, coalesce(user_id, 0), count(*) FROM journal GROUP BY 1, 4;

-- Counterparties: sorts, and the substring, e-mail, phone and tax id filters.
CREATE INDEX companies_name_trgm ON companies USING gin (account_id, name gin_trgm_ops);
CREATE INDEX companies_name ON companies (account_id, name, id);
CREATE INDEX companies_created ON companies (account_id, created_at, id);
CREATE INDEX companies_city ON companies (account_id, city, id);
CREATE INDEX companies_type ON companies (account_id, type_id, id);
CREATE INDEX companies_status ON companies (account_id, status_id, id);
CREATE INDEX companies_tax_id ON companies (account_id, tax_id, id);
-- A phone is found by the end of its digits, whatever its formatting.
CREATE INDEX phones_digits_suffix ON phones (account_id, reverse(phone_digits) text_pattern_ops);

-- Tasks, documents, money and deals: date ranges, tags and the quick filters.
CREATE INDEX tasks_date_start ON tasks (account_id, date_start, id);
CREATE INDEX tasks_deal ON tasks (account_id, deal_id, id);
CREATE INDEX tasks_tags ON tasks USING gin (account_id, tags);
CREATE INDEX documents_date ON documents (account_id, date, id);
CREATE INDEX documents_tags ON documents USING gin (account_id, tags);
CREATE INDEX money_movements_date ON money_movements (account_id, date, id);
CREATE INDEX money_movements_tags ON money_movements USING gin (account_id, tags);
CREATE INDEX deals_date_start ON deals (account_id, date_start, id);
CREATE INDEX deals_type ON deals (account_id, type_id, id);
CREATE INDEX deals_status ON deals (account_id, status_id, id);
CREATE INDEX deals_tags ON deals USING gin (account_id, tags);

-- Mail: folders, dates, links and the text filters.
CREATE INDEX mail_messages_date ON mail_messages (account_id, mail_account_id, date, id);
CREATE INDEX mail_messages_company ON mail_messages (account_id, company_id, id);
CREATE INDEX mail_messages_deal ON mail_messages (account_id, deal_id, id);
CREATE INDEX mail_messages_subject_trgm ON mail_messages USING gin (account_id, subject gin_trgm_ops);

-- The journal by author.
CREATE INDEX journal_user ON journal (account_id, user_id, id);
