-- The event feed (GET /event/list) and webhooks read the journal in commit
-- order. A journal row's id follows the order in which rows were inserted,
-- not the order in which their transactions committed, so a reader paging by
-- id could pass a row whose transaction commits later. Each journal row
-- therefore gets a position: per account, dense (1, 2, 3, ...), and handed out
-- in commit order.
--
-- How: the transaction that writes journal rows inserts them, as its last
-- statement, together with an upsert of its account's row of event_counters
-- that adds the number of rows and returns the new last position, and takes
-- their positions from it; then it commits. The counter row stays locked from that
-- upsert to the commit, so the next writer of the account gets its positions
-- only once this transaction is committed and visible: a reader that sees
-- position n sees every position below it. A transaction that rolls back
-- returns its positions with it, so there are no gaps. The price: the writes
-- of one account commit one after another (each holds the counter for its
-- journal insert and its commit, about a millisecond); accounts do not wait
-- for each other.
--
-- Existing rows get positions in id order. On a big journal this migration
-- rewrites the table once (the UPDATE below): plan the time of a table copy.

CREATE TABLE event_counters (
    account_id bigint PRIMARY KEY REFERENCES accounts (id),
    last       bigint NOT NULL CHECK (last >= 0)
);

ALTER TABLE journal ADD COLUMN position bigint;

UPDATE journal j
   SET position = x.n
  FROM (SELECT account_id, id, row_number() OVER (PARTITION BY account_id ORDER BY id) AS n FROM journal) x
 WHERE j.account_id = x.account_id AND j.id = x.id;

INSERT INTO event_counters (account_id, last)
SELECT account_id, max(position) FROM journal GROUP BY account_id;

ALTER TABLE journal ALTER COLUMN position SET NOT NULL;
CREATE UNIQUE INDEX journal_position ON journal (account_id, position);

-- Mail delivery outcomes are events too: a queued message delivered to its
-- SMTP server (deliver) or given up (delivery_failed).
ALTER TABLE journal DROP CONSTRAINT journal_action_check;
ALTER TABLE journal ADD CONSTRAINT journal_action_check
    CHECK (action IN ('insert', 'update', 'delete', 'send', 'receive', 'deliver', 'delivery_failed'));
