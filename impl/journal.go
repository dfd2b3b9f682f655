package impl

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Module codes of the universal list; the journal files each change under one.
const (
	ModuleCompanies = 1
	ModuleTasks     = 2
	ModuleDocuments = 4
	ModuleFinance   = 5
	ModuleSales     = 6
	ModuleDeals     = 20
	ModuleGoods     = 21
	ModuleMail      = 24
	ModuleJournal   = 50
	// ModuleWebhooks files the changes of webhook subscriptions; it is a module
	// of the journal and the event feed, not of the universal list.
	ModuleWebhooks = 60
)

// journalEntry is one row of the journal: one record inserted, changed or sent.
// For an insert, changes holds the stored fields; for an update, each changed
// field maps to [old, new].
type journalEntry struct {
	module   int
	entity   string
	recordID int64
	action   string
	changes  any
}

// writeJournal stores entries in the caller's transaction, so that the journal
// has a row exactly for every committed mutation. A zero p.TokenID (the mail
// poller, acting for a mailbox owner without a token) is stored as NULL.
//
// It also gives the rows their positions in the account's event feed
// (migration 0030): it takes them from the account's event counter in the same
// statement, and the counter's row stays locked until the transaction ends, so
// that positions are handed out in commit order. Callers therefore call it as
// the last statement of their transaction: the account's other writers wait
// for its commit from here on.
func writeJournal(ctx context.Context, tx *sqlx.Tx, p *Principal, entries []journalEntry) error {
	if len(entries) == 0 {
		return nil
	}
	modules := make([]int64, len(entries))
	entities := make([]string, len(entries))
	records := make([]int64, len(entries))
	actions := make([]string, len(entries))
	changes := make([]string, len(entries))
	for i, e := range entries {
		body, err := json.Marshal(e.changes)
		if err != nil {
			return fmt.Errorf("journal %s %d: %w", e.entity, e.recordID, err)
		}
		modules[i], entities[i], records[i], actions[i], changes[i] = int64(e.module), e.entity, e.recordID, e.action, string(body)
	}
	// One statement: the account's counter moves by the number of rows (and stays
	// locked until the commit), and the rows take the positions it handed out.
	_, err := tx.ExecContext(ctx, `
		WITH c AS (
			INSERT INTO event_counters AS ec (account_id, last) VALUES ($1, $9)
			ON CONFLICT (account_id) DO UPDATE SET last = ec.last + excluded.last
			RETURNING last)
		INSERT INTO journal (account_id, user_id, token_id, module, entity, record_id, action, changes, position)
		SELECT $1, $2, $3, m, e, r, a, x::jsonb, c.last - $9 + n
		  FROM c, unnest($4::smallint[], $5::text[], $6::bigint[], $7::text[], $8::text[]) WITH ORDINALITY AS j (m, e, r, a, x, n)`,
		p.AccountID, sql.NullInt64{Int64: p.UserID, Valid: p.UserID != 0}, p.tokenArg(),
		pq.Array(modules), pq.Array(entities), pq.Array(records), pq.Array(actions), pq.Array(changes), len(entries))
	if err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	return nil
}
