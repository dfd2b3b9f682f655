package impl

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/lib/pq"

	"github.com/crmservice/crm/db/dbtest"
)

// TestJournalCounts checks the maintained total of the journal's list
// (list_counts, module 50, by author) against a count of the rows, for both
// writers of the journal: crm_journal_append, whose rows count once for all
// by the last (counted_as, db/migrations/0077_journal_counted_once.sql), and
// the server's writeJournal, whose rows count one by one, also in the same
// transaction after a call of the function. On Citus the test calls the
// function on the coordinator, which writes the rows on a worker.
func TestJournalCounts(t *testing.T) {
	ctx := context.Background()
	db := dbtest.New(t)
	acc, err := CreateAccount(ctx, db, AccountInput{Name: "journal counts", BaseCurrency: "EUR", TimeZone: "Europe/Riga"})
	if err != nil {
		t.Fatal(err)
	}
	var users []int64
	for _, login := range []string{"a", "b"} {
		id, err := CreateUser(ctx, db, UserInput{AccountID: acc, Name: login, Login: login + "@journal-counts.example", Role: RoleMember})
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, id)
	}
	appendRows := func(exec func(query string, args ...any) error, user any, n int) {
		t.Helper()
		modules, entities, records, actions, changes := make([]int64, n), make([]string, n), make([]int64, n), make([]string, n), make([]string, n)
		for i := range n {
			modules[i], entities[i], records[i], actions[i], changes[i] = ModuleCompanies, "company", int64(1000+i), "insert", `{}`
		}
		if err := exec(`SELECT crm_journal_append($1, $2, NULL, $3::smallint[], $4, $5, $6, $7::jsonb[])`, acc, user,
			pq.Array(modules), pq.Array(entities), pq.Array(records), pq.Array(actions), pq.Array(changes)); err != nil {
			t.Fatal(err)
		}
	}
	onDB := func(query string, args ...any) error { _, err := db.ExecContext(ctx, query, args...); return err }
	check := func(step string, want map[int64]int64) {
		t.Helper()
		var got []struct {
			Owner   int64 `db:"owner"`
			Rows    int64 `db:"rows"`
			Counted int64 `db:"counted"`
		}
		err := db.SelectContext(ctx, &got, `
			WITH real AS (SELECT coalesce(user_id, 0) AS owner, count(*) AS n FROM journal WHERE account_id = $1 GROUP BY 1),
			     kept AS (SELECT owner_id AS owner, sum(n) AS n FROM list_counts
			               WHERE account_id = $1 AND module = 50 AND kind = 0 GROUP BY owner_id HAVING sum(n) <> 0)
			SELECT coalesce(real.owner, kept.owner) AS owner, coalesce(real.n, 0) AS rows, coalesce(kept.n, 0) AS counted
			  FROM real FULL JOIN kept ON kept.owner = real.owner ORDER BY 1`, acc)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d authors in the journal or its counts, want %d: %+v", step, len(got), len(want), got)
		}
		for _, g := range got {
			if g.Rows != want[g.Owner] || g.Counted != g.Rows {
				t.Errorf("%s: author %d has %d rows, counted %d; want %d rows", step, g.Owner, g.Rows, g.Counted, want[g.Owner])
			}
		}
	}

	appendRows(onDB, users[0], 3)
	check("three rows of one call", map[int64]int64{users[0]: 3})
	appendRows(onDB, nil, 2)
	check("two rows without an author", map[int64]int64{users[0]: 3, 0: 2})

	// The function, then the server's writer, in one transaction: the
	// setting the function sets for its own rows does not outlive them.
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	appendRows(func(query string, args ...any) error { _, err := tx.ExecContext(ctx, query, args...); return err }, users[1], 2)
	p := &Principal{AccountID: acc, UserID: users[1], Role: RoleMember}
	if err := writeJournal(ctx, tx, p, []journalEntry{
		{module: ModuleCompanies, entity: "company", recordID: 7, action: "update", changes: map[string]any{}},
		{module: ModuleCompanies, entity: "company", recordID: 8, action: "update", changes: map[string]any{}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	check("the function and writeJournal in one transaction", map[int64]int64{users[0]: 3, 0: 2, users[1]: 4})

	// A call that fails writes no row and counts none.
	if err := onDB(`SELECT crm_journal_append($1, $2, NULL, '{1}'::smallint[], '{company}', '{1}', '{bogus}', '{"{}"}'::jsonb[])`,
		acc, users[0]); err == nil {
		t.Fatal("a journal row with an unknown action was written")
	}
	check("after a failed call", map[int64]int64{users[0]: 3, 0: 2, users[1]: 4})
}

// TestJournalAppendRows checks the rows crm_journal_append writes for one to
// nine entries, four to a statement and the rest in one: every entry once, in
// the order given, with ids and positions rising, the positions the last of
// the account's event counter, and counted_as 0 but on the last, n.
func TestJournalAppendRows(t *testing.T) {
	ctx := context.Background()
	db := dbtest.New(t)
	acc, err := CreateAccount(ctx, db, AccountInput{Name: "journal rows", BaseCurrency: "EUR", TimeZone: "Europe/Riga"})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 9; n++ {
		modules, entities, records, actions, changes := make([]int64, n), make([]string, n), make([]int64, n), make([]string, n), make([]string, n)
		for i := range n {
			modules[i], entities[i], records[i], actions[i], changes[i] = int64(ModuleCompanies+i%2), fmt.Sprintf("e%d", i), int64(100*n+i),
				[]string{"insert", "update"}[i%2], fmt.Sprintf(`{"i": %d}`, i)
		}
		if _, err := db.ExecContext(ctx, `SELECT crm_journal_append($1, NULL, NULL, $2::smallint[], $3, $4, $5, $6::jsonb[])`, acc,
			pq.Array(modules), pq.Array(entities), pq.Array(records), pq.Array(actions), pq.Array(changes)); err != nil {
			t.Fatal(err)
		}
		var rows []struct {
			ID       int64         `db:"id"`
			Module   int64         `db:"module"`
			Entity   string        `db:"entity"`
			Record   int64         `db:"record_id"`
			Action   string        `db:"action"`
			Changes  string        `db:"changes"`
			Position int64         `db:"position"`
			Counted  sql.NullInt64 `db:"counted_as"`
		}
		if err := db.SelectContext(ctx, &rows, `SELECT id, module, entity, record_id, action, changes::text AS changes, position, counted_as
			FROM journal WHERE account_id = $1 AND record_id BETWEEN $2 AND $3 ORDER BY position`, acc, 100*n, 100*n+99); err != nil {
			t.Fatal(err)
		}
		var last int64
		if err := db.GetContext(ctx, &last, `SELECT last FROM event_counters WHERE account_id = $1`, acc); err != nil {
			t.Fatal(err)
		}
		if len(rows) != n || rows[n-1].Position != last {
			t.Fatalf("%d entries: %d rows, the last at %d; the counter at %d", n, len(rows), rows[len(rows)-1].Position, last)
		}
		for i, r := range rows {
			counted := int64(0)
			if i == n-1 {
				counted = int64(n)
			}
			if r.Module != modules[i] || r.Entity != entities[i] || r.Record != records[i] || r.Action != actions[i] ||
				r.Changes != fmt.Sprintf(`{"i": %d}`, i) || r.Position != last-int64(n-1-i) || r.Counted.Int64 != counted || !r.Counted.Valid ||
				i > 0 && r.ID <= rows[i-1].ID {
				t.Errorf("%d entries, row %d: %+v", n, i, r)
			}
		}
	}
}
