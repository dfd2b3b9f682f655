-- The time a writing function may take (impl/sql.go, Server.callWrite): a call
-- that is its own transaction commits when it returns, so the request's
-- deadline must hold inside it, not only in the server, which stops waiting
-- for the reply but cannot take back a commit that follows.
--
-- crm_budget_start, at the start of the call, limits every lock wait of the
-- call's transaction to ms milliseconds (lock_timeout, for the transaction
-- only) and returns the moment the budget ends; crm_budget_check, just before
-- a call that wrote returns, cancels it (SQLSTATE 57014, which the server
-- answers with its 503) when that moment has passed, so that the writes roll
-- back. A NULL budget sets nothing. Their first arguments are not p_account:
-- Citus does not distribute them by an argument, they run where their caller
-- runs.
--
-- A function of these files calls another in a statement with a WHERE that
-- holds always, `PERFORM crm_budget_check(deadline) WHERE pg_backend_pid() IS
-- NOT NULL`: Citus counts every function it created on the workers as
-- distributed and makes the generic plan of a bare call with parameters too
-- dear to choose, so that each execution would plan the call again (20-100 us
-- on a worker); a WHERE keeps Citus from looking (impl/sql.go, keptPlan).
CREATE OR REPLACE FUNCTION crm_budget_start(ms integer)
RETURNS timestamptz LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
	IF ms IS NULL THEN
		RETURN NULL;
	END IF;
	PERFORM set_config('lock_timeout', greatest(ms, 1) || 'ms', true);
	RETURN clock_timestamp() + make_interval(secs => greatest(ms, 1) / 1000.0);
END
$fn$;

CREATE OR REPLACE FUNCTION crm_budget_check(deadline timestamptz)
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
	IF deadline IS NOT NULL AND clock_timestamp() > deadline THEN
		RAISE EXCEPTION 'the request''s time ran out' USING ERRCODE = 'query_canceled';
	END IF;
END
$fn$;
