-- Contact persons at scale (issue 15, item 5).
--
-- A contact person's phones and e-mails are found through an index led by
-- (account_id, contact_id); before, only (account_id, company_id) led to them,
-- so the items of one contact were a scan of every item of the account filtered
-- by contact_id. The indexes hold only the items of contact persons: the
-- counterparty's own items (contact_id NULL, most of them) are reached through
-- phones_company and emails_company, and every statement that reads a contact's
-- items says contact_id = something, which implies the predicate.
--
-- The two indexes are built without locking writes to phones and e-mails by
-- migration 0067 (CREATE INDEX CONCURRENTLY, outside a transaction).

-- GET /contact/list shows the contact persons of the live counterparties the
-- caller sees; its exact total was a join of every contact person of the
-- account with its counterparty (tens of milliseconds at 200,000). list_counts
-- now keeps it: module 1 (counterparties), kind 1 (their contact persons),
-- owner = the counterparty's responsible user, counted while the counterparty
-- is not deleted. The triggers below keep it in the writing transaction.

-- list_counts_move_n moves n from the counter of the old owner to that of the
-- new one (NULL: no counter), touching the two rows in key order as
-- list_counts_move does.
CREATE FUNCTION list_counts_move_n(p_account bigint, p_module smallint, p_kind smallint, p_old bigint, p_new bigint, p_n bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_slot smallint := pg_backend_pid() % 8;
BEGIN
    IF p_n = 0 OR p_old IS NOT DISTINCT FROM p_new THEN
        RETURN;
    END IF;
    IF p_old IS NOT NULL AND (p_new IS NULL OR p_old < p_new) THEN
        INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n) VALUES (p_account, p_module, p_kind, p_old, v_slot, -p_n)
        ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n - p_n;
        p_old := NULL;
    END IF;
    IF p_new IS NOT NULL THEN
        INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n) VALUES (p_account, p_module, p_kind, p_new, v_slot, p_n)
        ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n + p_n;
    END IF;
    IF p_old IS NOT NULL THEN
        INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n) VALUES (p_account, p_module, p_kind, p_old, v_slot, -p_n)
        ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n - p_n;
    END IF;
END $$;

-- A contact person counts for its counterparty's owner while the counterparty
-- is live. The counterparty's row is read FOR SHARE: a concurrent change of its
-- owner or deletion (list_counts_company_contacts, below) then waits for this
-- transaction, and its count of the contact persons sees this one.
CREATE FUNCTION list_counts_contact() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_owner bigint;
    new_owner bigint;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        SELECT c.user_id INTO old_owner FROM companies c
         WHERE c.account_id = OLD.account_id AND c.id = OLD.company_id AND c.deleted_at IS NULL FOR SHARE;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        SELECT c.user_id INTO new_owner FROM companies c
         WHERE c.account_id = NEW.account_id AND c.id = NEW.company_id AND c.deleted_at IS NULL FOR SHARE;
    END IF;
    PERFORM list_counts_move(coalesce(NEW.account_id, OLD.account_id), 1::smallint, 1::smallint, old_owner, new_owner);
    RETURN NULL;
END $$;

-- A counterparty whose owner changes, or which is deleted or restored, moves
-- the count of all its contact persons.
CREATE FUNCTION list_counts_company_contacts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_owner bigint;
    new_owner bigint;
    v_n bigint;
BEGIN
    IF OLD.deleted_at IS NULL THEN
        old_owner := OLD.user_id;
    END IF;
    IF NEW.deleted_at IS NULL THEN
        new_owner := NEW.user_id;
    END IF;
    IF old_owner IS NOT DISTINCT FROM new_owner THEN
        RETURN NULL;
    END IF;
    SELECT count(*) INTO v_n FROM contacts ct WHERE ct.account_id = NEW.account_id AND ct.company_id = NEW.id;
    PERFORM list_counts_move_n(NEW.account_id, 1::smallint, 1::smallint, old_owner, new_owner, v_n);
    RETURN NULL;
END $$;

CREATE TRIGGER list_counts_ins AFTER INSERT OR DELETE ON contacts FOR EACH ROW EXECUTE FUNCTION list_counts_contact();
CREATE TRIGGER list_counts_upd AFTER UPDATE OF company_id ON contacts FOR EACH ROW
    WHEN (OLD.company_id IS DISTINCT FROM NEW.company_id) EXECUTE FUNCTION list_counts_contact();

CREATE TRIGGER list_counts_contacts_upd AFTER UPDATE OF user_id, deleted_at ON companies FOR EACH ROW
    WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL))
    EXECUTE FUNCTION list_counts_company_contacts();

-- The counts of the contact persons that exist already. cross-account: the
-- migration fills every account's counters at once.
INSERT INTO list_counts (account_id, module, kind, owner_id, slot, n)
SELECT ct.account_id, 1, 1, c.user_id, 0, count(*)
  FROM contacts ct
  JOIN companies c ON c.account_id = ct.account_id AND c.id = ct.company_id
 WHERE c.deleted_at IS NULL
 GROUP BY ct.account_id, c.user_id;
