-- The frequent name substring (issue 15, item 3). A name filter of the
-- counterparty list (name ILIKE '%…%') is found through the trigram index of
-- companies, which cannot tell a match from its trigrams alone: every
-- candidate is checked again on its row of companies, a wide row, so a term in
-- 3 % of an account reads most of the account's pages. company_names holds
-- what the filter and the default order need of each live counterparty, and
-- nothing else: its id, responsible user (for the access rule) and lower-cased
-- name, so that the recheck reads a narrow row, compares with LIKE (the
-- lower-cased ILIKE, as PostgreSQL itself computes ILIKE in a multi-byte
-- encoding), and the total and the page come from this table alone.
--
-- Triggers keep it in the writing transaction: a row per counterparty while
-- it is not deleted.
--
-- Big table: the migration copies every live counterparty while creating the
-- triggers holds writes to companies. The trigram index of the copy is built
-- after this migration's commit, without locking writes, by migration 0067
-- (CREATE INDEX CONCURRENTLY), so the lock lasts the copy alone.
CREATE TABLE company_names (
    account_id bigint NOT NULL,
    id         bigint NOT NULL,
    user_id    bigint NOT NULL,
    name_lc    text NOT NULL,
    PRIMARY KEY (account_id, id),
    CONSTRAINT company_names_company_fk FOREIGN KEY (account_id, id) REFERENCES companies (account_id, id) ON DELETE CASCADE
);

-- PL/pgSQL, as every trigger function (Citus runs them on the shards).
CREATE FUNCTION company_names_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.deleted_at IS NULL THEN
            INSERT INTO company_names (account_id, id, user_id, name_lc) VALUES (NEW.account_id, NEW.id, NEW.user_id, lower(NEW.name));
        END IF;
    ELSIF NEW.deleted_at IS NOT NULL THEN
        DELETE FROM company_names WHERE account_id = NEW.account_id AND id = NEW.id;
    ELSE
        INSERT INTO company_names AS n (account_id, id, user_id, name_lc) VALUES (NEW.account_id, NEW.id, NEW.user_id, lower(NEW.name))
        ON CONFLICT (account_id, id) DO UPDATE SET user_id = excluded.user_id, name_lc = excluded.name_lc;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER company_names_ins AFTER INSERT ON companies FOR EACH ROW EXECUTE FUNCTION company_names_sync();
CREATE TRIGGER company_names_upd AFTER UPDATE OF name, user_id, deleted_at ON companies FOR EACH ROW
    WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.user_id IS DISTINCT FROM NEW.user_id
          OR (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL))
    EXECUTE FUNCTION company_names_sync();

-- The counterparties that exist already. cross-account: the migration fills
-- every account's rows at once.
INSERT INTO company_names (account_id, id, user_id, name_lc)
SELECT account_id, id, user_id, lower(name) FROM companies WHERE deleted_at IS NULL;
