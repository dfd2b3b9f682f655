-- crm_sees_owner: whether the caller (usr with role and department dept)
-- sees the records whose responsible user is owner (impl/access.go,
-- seesOwner): an admin every record, a head those of the users of their
-- department, anyone their own. Its first argument is not p_account, so Citus
-- does not distribute it: it runs where its caller runs.
CREATE OR REPLACE FUNCTION crm_sees_owner(acc bigint, usr bigint, role text, dept bigint, owner bigint)
RETURNS boolean LANGUAGE plpgsql STABLE AS $fn$
BEGIN
	IF role = 'admin' OR owner = usr THEN
		RETURN true;
	END IF;
	IF role <> 'head' OR dept IS NULL OR owner IS NULL THEN
		RETURN false;
	END IF;
	PERFORM FROM users WHERE account_id = acc AND id = owner AND department_id = dept;
	RETURN FOUND;
END
$fn$;
