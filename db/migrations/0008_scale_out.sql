-- Ready for Citus (docs/scale-out.md): every statement of a request names the
-- account, and every unique key holds it.

-- A token is unique within its account. Databases created before this migration
-- had UNIQUE (hash); 0001 now creates the same constraint as below.
ALTER TABLE tokens DROP CONSTRAINT IF EXISTS tokens_hash_key;
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_constraint WHERE conrelid = 'tokens'::regclass AND conname = 'tokens_hash') THEN
        ALTER TABLE tokens ADD CONSTRAINT tokens_hash UNIQUE (account_id, hash);
    END IF;
END $$;

-- Tokens issued before the token named its account ("crm_" and 43 characters)
-- are found through this map from their hash to their account. It has no
-- account_id column on purpose: on Citus it is a reference table, copied to
-- every node, so that the one lookup a legacy token needs runs where it is.
-- New tokens never enter it.
CREATE TABLE legacy_tokens (
    hash    bytea PRIMARY KEY CHECK (length(hash) = 32),
    account bigint NOT NULL
);
INSERT INTO legacy_tokens (hash, account) SELECT hash, account_id FROM tokens;

-- The triggers of list_counts run on Citus's shards, where a LANGUAGE sql
-- function cannot be planned; PL/pgSQL can.
CREATE OR REPLACE FUNCTION list_counts_apply(deltas jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, n)
    SELECT account_id, module, kind, owner_id, sum(d)
      FROM jsonb_to_recordset(deltas) AS x (account_id bigint, module smallint, kind smallint, owner_id bigint, d bigint)
     GROUP BY account_id, module, kind, owner_id
    HAVING sum(d) <> 0
     ORDER BY account_id, module, kind, owner_id
    ON CONFLICT (account_id, module, kind, owner_id) DO UPDATE SET n = lc.n + excluded.n;
END $$;
