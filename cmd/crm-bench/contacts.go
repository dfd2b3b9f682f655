package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/db"
)

// Contact persons of the bench (issue 15, item 5). The big account gets
// contact persons with a phone and an e-mail each: one counterparty with 1,000
// of them and up to 9,950 counterparties with 20 (199,000 at the full size),
// generated once into a data set that lacks them (so a data set made before
// they existed gets them too). The scenarios then read the contact list and
// the two kinds of card, and read them again after another account has added
// 100,000 items (contact persons, phones and e-mails): one account's cost must
// not grow with another's data.

const (
	bigCardContacts   = 1000
	smallCardContacts = 20
	maxSmallCards     = 9950
	// otherItems is what the other account adds: per contact person, two
	// phones and two e-mails, so five items.
	otherItems = 100_000
	// otherCompanyName marks the counterparty of the other account that holds
	// the added items, so that the next run can take them away again.
	otherCompanyName = "Bench load of another account"
)

// contactData locates the contact persons of the big account.
type contactData struct {
	pool                   *sqlx.DB // a pool of its own, whose statements no trace records
	bigCard                int64    // the counterparty with 1,000 contact persons
	firstSmall, lastSmall  int64    // the counterparties with 20, consecutive ids
	otherAccount           int64
	otherUser, otherTypeID int64
	otherContacts          int // contact persons the other account adds
}

// smallCards is how many counterparties of the big account get 20 contact
// persons: 9,950, or half the account on a small data set.
func smallCards(d *dataSet) int {
	return max(1, min(maxSmallCards, (d.Companies[0]-1)/2))
}

// ensureContacts generates the big account's contact persons unless they
// exist, and takes away what an earlier run's other account added, so that
// every run measures "before" on the same data.
func ensureContacts(ctx context.Context, log *slog.Logger, url string, d *dataSet) (*contactData, error) {
	pool, err := db.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	c := contactData{pool: pool}
	if err := c.ensure(ctx, log, d); err != nil {
		pool.Close()
		return nil, err
	}
	return &c, nil
}

func (c *contactData) ensure(ctx context.Context, log *slog.Logger, d *dataSet) error {
	acc, pool := d.Accounts[0], c.pool
	if err := pool.GetContext(ctx, &c.bigCard, `SELECT min(id) FROM companies WHERE account_id = $1 AND created_via = 'import'`, acc); err != nil {
		return fmt.Errorf("the big account's first counterparty: %w", err)
	}
	c.firstSmall, c.lastSmall = c.bigCard+1, c.bigCard+int64(smallCards(d))
	if len(d.Accounts) > 1 {
		c.otherAccount = d.Accounts[1]
		c.otherContacts = min(otherItems, 50*d.Companies[1]) / 5
		if err := pool.QueryRowxContext(ctx, `
			SELECT (SELECT min(id) FROM users WHERE account_id = $1 AND role = 'admin'),
			       (SELECT min(id) FROM directory_values WHERE account_id = $1 AND directory_code = 9)`, c.otherAccount).
			Scan(&c.otherUser, &c.otherTypeID); err != nil {
			return fmt.Errorf("the other account: %w", err)
		}
	}
	var have int
	if err := pool.GetContext(ctx, &have, `SELECT count(*) FROM contacts WHERE account_id = $1 AND company_id = $2`, acc, c.bigCard); err != nil {
		return err
	}
	if have < bigCardContacts {
		start := time.Now()
		log.Info("generating contact persons", "account", acc, "contacts", bigCardContacts+smallCardContacts*smallCards(d))
		if err := generateContacts(ctx, pool, acc, c); err != nil {
			return fmt.Errorf("contact persons: %w", err)
		}
		log.Info("generated contact persons", "took", time.Since(start).Round(time.Second))
	}
	if c.otherAccount != 0 {
		if err := removeOtherLoad(ctx, pool, c); err != nil {
			return fmt.Errorf("take away the other account's load: %w", err)
		}
	}
	// cross-account: maintenance of whole tables, in the benchmark's own database.
	if _, err := pool.ExecContext(ctx, `VACUUM ANALYZE contacts, phones, emails, list_counts, company_names`); err != nil {
		return err
	}
	return nil
}

// generateContacts writes the big account's contact persons, each with a
// phone and an e-mail, in one transaction.
func generateContacts(ctx context.Context, pool *sqlx.DB, acc int64, c *contactData) error {
	tx, err := pool.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// The counter of the contact list is one row per owner: a row trigger
	// would update it once per contact person, each update a new version of the
	// row in this one transaction. The load counts them in one statement instead,
	// except on Citus, which refuses to switch a trigger off (its triggers count).
	citus, err := db.IsCitus(ctx, tx)
	if err != nil {
		return err
	}
	if !citus {
		// cross-account: DDL on the whole table, in the benchmark's own database.
		if _, err := tx.ExecContext(ctx, `ALTER TABLE contacts DISABLE TRIGGER list_counts_ins`); err != nil {
			return err
		}
	}
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO contacts (account_id, company_id, first_name, last_name)
		  SELECT $1, $2, 'Anna', 'Person ' || i FROM generate_series(1, $3::int) i`, []any{acc, c.bigCard, bigCardContacts}},
		{`INSERT INTO contacts (account_id, company_id, first_name, last_name)
		  SELECT $1, co, 'Janis', 'Person ' || co || '-' || i FROM generate_series($2::bigint, $3::bigint) co, generate_series(1, $4::int) i`,
			[]any{acc, c.firstSmall, c.lastSmall, smallCardContacts}},
		{`INSERT INTO phones (account_id, company_id, contact_id, phone, descr)
		  SELECT $1, ct.company_id, ct.id, '+371 6' || lpad((ct.id % 10000000)::text, 7, '0'), 'work'
		    FROM contacts ct WHERE ct.account_id = $1 AND ct.company_id BETWEEN $2 AND $3`, []any{acc, c.bigCard, c.lastSmall}},
		{`INSERT INTO emails (account_id, company_id, contact_id, email)
		  SELECT $1, ct.company_id, ct.id, 'person' || ct.id || '@company' || ct.company_id || '.example'
		    FROM contacts ct WHERE ct.account_id = $1 AND ct.company_id BETWEEN $2 AND $3`, []any{acc, c.bigCard, c.lastSmall}},
	} {
		if _, err := tx.ExecContext(ctx, st.sql, st.args...); err != nil {
			return err
		}
	}
	if citus {
		return tx.Commit()
	}
	_, err = tx.ExecContext(ctx, `
		INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n)
		SELECT $1, 1, 1, c.user_id, 0, count(*)
		  FROM contacts ct JOIN companies c ON c.account_id = $1 AND c.id = ct.company_id
		 WHERE ct.account_id = $1 AND ct.company_id BETWEEN $2 AND $3 AND c.deleted_at IS NULL
		 GROUP BY c.user_id
		ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n + excluded.n`, acc, c.bigCard, c.lastSmall)
	if err != nil {
		return fmt.Errorf("count the contact persons: %w", err)
	}
	// cross-account: DDL on the whole table, in the benchmark's own database.
	if _, err := tx.ExecContext(ctx, `ALTER TABLE contacts ENABLE TRIGGER list_counts_ins`); err != nil {
		return err
	}
	return tx.Commit()
}

// removeOtherLoad deletes the counterparty of the other account that holds an
// earlier run's added items, with its contact persons, phones and e-mails.
func removeOtherLoad(ctx context.Context, pool *sqlx.DB, c *contactData) error {
	tx, err := pool.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// As in generateContacts: one update of the counter, not one per contact
	// person (on Citus the delete trigger counts).
	citus, err := db.IsCitus(ctx, tx)
	if err != nil {
		return err
	}
	stmts := []string{
		`UPDATE list_counts lc SET n = lc.n - x.n
		   FROM (SELECT c.user_id, count(*) AS n FROM contacts ct JOIN companies c ON c.account_id = $1 AND c.id = ct.company_id
		          WHERE ct.account_id = $1 AND c.name = $2 AND c.deleted_at IS NULL GROUP BY c.user_id) x
		  WHERE lc.account_id = $1 AND lc.module = 1 AND lc.kind = 1 AND lc.owner_id = x.user_id AND lc.slot = 0`,
		`DELETE FROM phones WHERE account_id = $1 AND company_id IN (SELECT id FROM companies WHERE account_id = $1 AND name = $2)`,
		`DELETE FROM emails WHERE account_id = $1 AND company_id IN (SELECT id FROM companies WHERE account_id = $1 AND name = $2)`,
		`DELETE FROM contacts WHERE account_id = $1 AND company_id IN (SELECT id FROM companies WHERE account_id = $1 AND name = $2)`,
		`DELETE FROM companies WHERE account_id = $1 AND name = $2`,
	}
	if citus {
		stmts = stmts[1:]
	} else {
		// cross-account: DDL on the whole table, in the benchmark's own database.
		if _, err := tx.ExecContext(ctx, `ALTER TABLE contacts DISABLE TRIGGER list_counts_ins`); err != nil {
			return err
		}
	}
	for _, stmt := range stmts {
		if _, err := tx.ExecContext(ctx, stmt, c.otherAccount, otherCompanyName); err != nil {
			return err
		}
	}
	if !citus {
		// cross-account: DDL on the whole table, in the benchmark's own database.
		if _, err := tx.ExecContext(ctx, `ALTER TABLE contacts ENABLE TRIGGER list_counts_ins`); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// addOtherLoad makes the other account add its items: a counterparty with
// contact persons, each with two phones and two e-mails.
func addOtherLoad(ctx context.Context, pool *sqlx.DB, c *contactData) error {
	tx, err := pool.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// As in generateContacts: one update of the counter, not one per contact person.
	// cross-account: DDL on the whole table, in the benchmark's own database.
	if _, err := tx.ExecContext(ctx, `ALTER TABLE contacts DISABLE TRIGGER list_counts_ins`); err != nil {
		return err
	}
	var company int64
	if err := tx.GetContext(ctx, &company, `INSERT INTO companies (account_id, name, type_id, user_id) VALUES ($1, $2, $3, $4) RETURNING id`,
		c.otherAccount, otherCompanyName, c.otherTypeID, c.otherUser); err != nil {
		return err
	}
	for _, stmt := range []string{
		`INSERT INTO contacts (account_id, company_id, last_name) SELECT $1, $2, 'Other ' || i FROM generate_series(1, $3::int) i`,
		`INSERT INTO phones (account_id, company_id, contact_id, phone)
		 SELECT $1, $2, ct.id, '+372 5' || lpad((ct.id % 1000000)::text, 6, '0') || k FROM contacts ct, generate_series(1, 2) k
		  WHERE ct.account_id = $1 AND ct.company_id = $2 AND $3 > 0`,
		`INSERT INTO emails (account_id, company_id, contact_id, email)
		 SELECT $1, $2, ct.id, 'other' || ct.id || '-' || k || '@load.example' FROM contacts ct, generate_series(1, 2) k
		  WHERE ct.account_id = $1 AND ct.company_id = $2 AND $3 > 0`,
	} {
		if _, err := tx.ExecContext(ctx, stmt, c.otherAccount, company, c.otherContacts); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO list_counts AS lc (account_id, module, kind, owner_id, slot, n) VALUES ($1, 1, 1, $2, 0, $3)
		ON CONFLICT (account_id, module, kind, owner_id, slot) DO UPDATE SET n = lc.n + excluded.n`,
		c.otherAccount, c.otherUser, c.otherContacts); err != nil {
		return err
	}
	// cross-account: DDL on the whole table, in the benchmark's own database.
	if _, err := tx.ExecContext(ctx, `ALTER TABLE contacts ENABLE TRIGGER list_counts_ins`); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	// As autovacuum would after such a load, so that the comparison is of
	// plans on current statistics.
	// cross-account: maintenance of whole tables, in the benchmark's own database.
	_, err = pool.ExecContext(ctx, `VACUUM ANALYZE contacts, phones, emails`)
	return err
}

// contactScenarios are the scenarios of contact persons: the contact list
// with 200 per page and the cards with 20 and 1,000 contact persons, then the
// list and the small card again after the other account has added its items
// (added by the first request of the first "after" scenario, before its
// samples and measurements).
func contactScenarios(c *contactData) []scenario {
	list := func(*rand.Rand) (string, string, []byte) {
		return http.MethodGet, "/contact/list?records_onpage=200", nil
	}
	smallCard := func(rng *rand.Rand) (string, string, []byte) {
		return http.MethodGet, fmt.Sprintf("/company/get?id=%d", c.firstSmall+rng.Int64N(c.lastSmall-c.firstSmall+1)), nil
	}
	bigCard := func(*rand.Rand) (string, string, []byte) {
		return http.MethodGet, fmt.Sprintf("/company/get?id=%d", c.bigCard), nil
	}
	var once sync.Once
	after := func(next func(*rand.Rand) (string, string, []byte)) func(*rand.Rand) (string, string, []byte) {
		return func(rng *rand.Rand) (string, string, []byte) {
			once.Do(func() {
				if c.otherAccount == 0 {
					return
				}
				if err := addOtherLoad(context.Background(), c.pool, c); err != nil {
					panic(fmt.Sprintf("crm-bench: the other account's load: %v", err))
				}
			})
			return next(rng)
		}
	}
	load := fmt.Sprintf("after another account added %d items", 5*c.otherContacts)
	return []scenario{
		{name: "contact list, 200 per page (200,000 contact persons)", goal: 10 * time.Millisecond, next: list},
		{name: "counterparty card with 20 contact persons", goal: 3 * time.Millisecond, next: smallCard},
		{name: "counterparty card with 1,000 contact persons", goal: 50 * time.Millisecond, next: bigCard},
		{name: "contact list, 200 per page, " + load, goal: 10 * time.Millisecond, next: after(list)},
		{name: "counterparty card with 20 contact persons, " + load, goal: 3 * time.Millisecond, next: after(smallCard)},
	}
}
