package impl_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
)

// kpiWriter writes random records of one account through SQL, one statement
// per change (some change several records), as the triggers of kpi_daily
// (migration 0068) see the writes of the API and of anyone else. It remembers
// the ids it may touch.
type kpiWriter struct {
	w   *dashWorld
	rng *rand.Rand
	// anchors carry the tasks, deals and documents and are never deleted;
	// loose counterparties have no records and may be.
	anchors, loose                       []int64
	tasks, deals, documents, movements   []int64
	invoice, contract                    int64
	midnights                            []time.Time
	dates                                []string
	users                                []int64
	dealType, dealStage, taskKind, cType int64
}

// The days around which the records fall: both sides of the turn of October,
// of 20 November and of the turn of November, in Riga.
var kpiDays = []string{"2026-10-30", "2026-10-31", "2026-11-01", "2026-11-02", "2026-11-19", "2026-11-20", "2026-11-21",
	"2026-11-30", "2026-12-01"}

func newKPIWriter(t *testing.T, w *dashWorld, seed uint64) *kpiWriter {
	t.Helper()
	riga, err := time.LoadLocation("Europe/Riga")
	if err != nil {
		t.Fatal(err)
	}
	k := &kpiWriter{w: w, rng: rand.New(rand.NewPCG(seed, 68)), invoice: w.invoice, contract: w.contract,
		users:    []int64{w.admin.id, w.head.id, w.member.id, w.peer.id, w.world.other.id},
		dealType: w.dirs[40][0], dealStage: w.dirs[41][0], taskKind: w.call, cType: w.client}
	for _, d := range kpiDays {
		day, err := time.ParseInLocation(time.DateOnly, d, riga)
		if err != nil {
			t.Fatal(err)
		}
		k.midnights = append(k.midnights, day)
		k.dates = append(k.dates, d)
	}
	for i := range 4 {
		k.anchors = append(k.anchors, k.insertID(t, `INSERT INTO companies (account_id, name, type_id, user_id, created_at)
			VALUES ($1, $2, $3, $4, $5) RETURNING id`, w.accountID, fmt.Sprint("Anchor ", i), k.cType, k.user(), k.moment()))
	}
	return k
}

func (k *kpiWriter) user() int64 { return k.users[k.rng.IntN(len(k.users))] }

// moment is within ten hours of a Riga midnight of kpiDays: on either side of
// the midnights of Riga, Tokyo (7 hours earlier) and UTC (2 or 3 hours later).
func (k *kpiWriter) moment() time.Time {
	return k.midnights[k.rng.IntN(len(k.midnights))].Add(time.Duration(k.rng.IntN(1200)-600) * time.Minute)
}

func (k *kpiWriter) date() string { return k.dates[k.rng.IntN(len(k.dates))] }

func (k *kpiWriter) sum() string { return fmt.Sprintf("%d.%02d", k.rng.IntN(5000), k.rng.IntN(100)) }

func (k *kpiWriter) pick(ids []int64) int64 { return ids[k.rng.IntN(len(ids))] }

// drop removes a random id of ids and returns it.
func (k *kpiWriter) drop(ids *[]int64) int64 {
	i := k.rng.IntN(len(*ids))
	id := (*ids)[i]
	*ids = slices.Delete(*ids, i, i+1)
	return id
}

func (k *kpiWriter) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	k.w.exec(t, query, args...)
}

func (k *kpiWriter) insertID(t *testing.T, query string, args ...any) int64 {
	t.Helper()
	var id int64
	if err := k.w.e.db.Get(&id, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return id
}

// step makes one random change of one of the five tables.
func (k *kpiWriter) step(t *testing.T) {
	t.Helper()
	acc := k.w.accountID
	switch table := k.rng.IntN(5); {
	case table == 0 && (len(k.loose) == 0 || k.rng.IntN(3) == 0):
		var deleted *time.Time
		if k.rng.IntN(5) == 0 {
			at := k.moment()
			deleted = &at
		}
		k.loose = append(k.loose, k.insertID(t, `INSERT INTO companies (account_id, name, type_id, user_id, created_at, deleted_at)
			VALUES ($1, 'Loose', $2, $3, $4, $5) RETURNING id`, acc, k.cType, k.user(), k.moment(), deleted))
	case table == 0:
		all := append(slices.Clone(k.loose), k.anchors...)
		switch k.rng.IntN(6) {
		case 0:
			k.exec(t, `UPDATE companies SET user_id = $3 WHERE account_id = $1 AND id = $2`, acc, k.pick(all), k.user())
		case 1:
			k.exec(t, `UPDATE companies SET deleted_at = $3 WHERE account_id = $1 AND id = $2`, acc, k.pick(all), k.moment())
		case 2:
			k.exec(t, `UPDATE companies SET deleted_at = NULL WHERE account_id = $1 AND id = $2`, acc, k.pick(all))
		case 3:
			k.exec(t, `UPDATE companies SET created_at = $3 WHERE account_id = $1 AND id = $2`, acc, k.pick(all), k.moment())
		case 4:
			k.exec(t, `DELETE FROM companies WHERE account_id = $1 AND id = $2`, acc, k.drop(&k.loose))
		case 5: // one statement, several records: a user's live counterparties go to another
			k.exec(t, `UPDATE companies SET user_id = $3 WHERE account_id = $1 AND user_id = $2 AND deleted_at IS NULL`, acc, k.user(), k.user())
		}
	case table == 1 && (len(k.tasks) == 0 || k.rng.IntN(3) == 0):
		start := k.moment()
		var done *time.Time
		status := 1
		if k.rng.IntN(2) == 0 {
			at := k.moment()
			done, status = &at, 2
		}
		k.tasks = append(k.tasks, k.insertID(t, `INSERT INTO tasks (account_id, company_id, note, type_id, status_id, user_id, assigner_id, date_start, done_at)
			VALUES ($1, $2, 'Task', $3, $4, $5, $6, $7, $8) RETURNING id`, acc, k.pick(k.anchors), k.taskKind, status, k.user(), k.user(), start, done))
	case table == 1:
		switch k.rng.IntN(6) {
		case 0:
			k.exec(t, `UPDATE tasks SET status_id = 2, done_at = $3 WHERE account_id = $1 AND id = $2`, acc, k.pick(k.tasks), k.moment())
		case 1:
			k.exec(t, `UPDATE tasks SET status_id = 1, done_at = NULL WHERE account_id = $1 AND id = $2`, acc, k.pick(k.tasks))
		case 2:
			k.exec(t, `UPDATE tasks SET user_id = $3 WHERE account_id = $1 AND id = $2`, acc, k.pick(k.tasks), k.user())
		case 3:
			k.exec(t, `UPDATE tasks SET note = 'Renamed', result = 'Result' WHERE account_id = $1 AND id = $2`, acc, k.pick(k.tasks))
		case 4:
			k.exec(t, `DELETE FROM tasks WHERE account_id = $1 AND id = $2`, acc, k.drop(&k.tasks))
		case 5:
			k.exec(t, `UPDATE tasks SET user_id = $3 WHERE account_id = $1 AND user_id = $2`, acc, k.user(), k.user())
		}
	case table == 2 && (len(k.deals) == 0 || k.rng.IntN(3) == 0):
		k.deals = append(k.deals, k.insertID(t, `INSERT INTO deals (account_id, name, company_id, type_id, status_id, user_id, date_start, date_finish, sum, created_at)
			VALUES ($1, 'Deal', $2, $3, $4, $5, '2026-11-01', '2026-12-01', $6::numeric, $7) RETURNING id`,
			acc, k.pick(k.anchors), k.dealType, k.dealStage, k.user(), k.sum(), k.moment()))
	case table == 2:
		switch k.rng.IntN(5) {
		case 0:
			k.exec(t, `UPDATE deals SET user_id = $3 WHERE account_id = $1 AND id = $2`, acc, k.pick(k.deals), k.user())
		case 1:
			k.exec(t, `UPDATE deals SET sum = $3::numeric WHERE account_id = $1 AND id = $2`, acc, k.pick(k.deals), k.sum())
		case 2:
			k.exec(t, `UPDATE deals SET created_at = $3, sum = sum + 1 WHERE account_id = $1 AND id = $2`, acc, k.pick(k.deals), k.moment())
		case 3:
			k.exec(t, `DELETE FROM deals WHERE account_id = $1 AND id = $2`, acc, k.drop(&k.deals))
		case 4:
			k.exec(t, `UPDATE deals SET sum = sum * 2 WHERE account_id = $1 AND user_id = $2`, acc, k.user())
		}
	case table == 3 && (len(k.documents) == 0 || k.rng.IntN(3) == 0):
		k.documents = append(k.documents, k.insertID(t, `INSERT INTO documents (account_id, date, sum, type_id, user_id, company_id)
			VALUES ($1, $2, $3::numeric, $4, $5, $6) RETURNING id`, acc, k.date(), k.sum(), k.pick([]int64{k.invoice, k.contract}), k.user(), k.pick(k.anchors)))
	case table == 3:
		switch k.rng.IntN(6) {
		case 0:
			k.exec(t, `UPDATE documents SET type_id = CASE WHEN type_id = $3 THEN $4 ELSE $3 END WHERE account_id = $1 AND id = $2`,
				acc, k.pick(k.documents), k.invoice, k.contract)
		case 1:
			k.exec(t, `UPDATE documents SET date = $3 WHERE account_id = $1 AND id = $2`, acc, k.pick(k.documents), k.date())
		case 2:
			k.exec(t, `UPDATE documents SET sum = $3::numeric, user_id = $4 WHERE account_id = $1 AND id = $2`, acc, k.pick(k.documents), k.sum(), k.user())
		case 3:
			k.exec(t, `UPDATE documents SET number = 'N-1' WHERE account_id = $1 AND id = $2`, acc, k.pick(k.documents))
		case 4:
			k.exec(t, `DELETE FROM documents WHERE account_id = $1 AND id = $2`, acc, k.drop(&k.documents))
		case 5:
			k.exec(t, `UPDATE documents SET date = date + 1 WHERE account_id = $1 AND user_id = $2`, acc, k.user())
		}
	case len(k.movements) == 0 || k.rng.IntN(3) == 0:
		k.movements = append(k.movements, k.insertID(t, `INSERT INTO money_movements (account_id, date, sum, sum_currency, direction, money_account_id, is_transfer, user_id)
			VALUES ($1, $2, $3::numeric, $3::numeric, $4, $5, $6, $7) RETURNING id`,
			acc, k.date(), k.sum(), 1+k.rng.IntN(2), k.w.moneyAccount, k.rng.IntN(5) == 0, k.user()))
	default:
		switch k.rng.IntN(6) {
		case 0:
			k.exec(t, `UPDATE money_movements SET direction = 3 - direction WHERE account_id = $1 AND id = $2`, acc, k.pick(k.movements))
		case 1:
			k.exec(t, `UPDATE money_movements SET is_transfer = NOT is_transfer WHERE account_id = $1 AND id = $2`, acc, k.pick(k.movements))
		case 2:
			k.exec(t, `UPDATE money_movements SET sum = $3::numeric, date = $4 WHERE account_id = $1 AND id = $2`,
				acc, k.pick(k.movements), k.sum(), k.date())
		case 3:
			k.exec(t, `UPDATE money_movements SET user_id = $3 WHERE account_id = $1 AND id = $2`, acc, k.pick(k.movements), k.user())
		case 4:
			k.exec(t, `DELETE FROM money_movements WHERE account_id = $1 AND id = $2`, acc, k.drop(&k.movements))
		case 5:
			k.exec(t, `DELETE FROM money_movements WHERE account_id = $1 AND date = $2`, acc, k.date())
			k.movements = nil // some are gone; new ones are inserted before the next change
		}
	}
}

// kpiRecount compares kpi_daily of the accounts with a count from their
// records in one statement, and returns the rows where the two differ.
// cross-account: the test's own accounts, in its own database.
const kpiRecount = `
	WITH recount AS (
		SELECT c.account_id, c.user_id, 1 AS metric, (c.created_at AT TIME ZONE a.time_zone)::date AS day, 0::bigint AS type_id,
		       count(*) AS n, 0::numeric AS amount
		  FROM companies c JOIN accounts a ON a.id = c.account_id
		 WHERE c.account_id = ANY ($1) AND c.deleted_at IS NULL
		 GROUP BY 1, 2, 4
		UNION ALL
		SELECT t.account_id, t.user_id, 2, (t.done_at AT TIME ZONE a.time_zone)::date, 0, count(*), 0
		  FROM tasks t JOIN accounts a ON a.id = t.account_id
		 WHERE t.account_id = ANY ($1) AND t.done_at IS NOT NULL
		 GROUP BY 1, 2, 4
		UNION ALL
		SELECT d.account_id, d.user_id, 3, (d.created_at AT TIME ZONE a.time_zone)::date, 0, count(*), sum(d.sum)
		  FROM deals d JOIN accounts a ON a.id = d.account_id
		 WHERE d.account_id = ANY ($1)
		 GROUP BY 1, 2, 4
		UNION ALL
		SELECT d.account_id, d.user_id, 4, d.date, d.type_id, count(*), sum(d.sum)
		  FROM documents d
		 WHERE d.account_id = ANY ($1)
		 GROUP BY 1, 2, 4, 5
		UNION ALL
		SELECT m.account_id, m.user_id, 5, m.date, 0, count(*), sum(m.sum)
		  FROM money_movements m
		 WHERE m.account_id = ANY ($1) AND m.direction = 1 AND NOT m.is_transfer
		 GROUP BY 1, 2, 4
	), kept AS (
		SELECT account_id, user_id, metric, day, type_id, n, amount FROM kpi_daily WHERE account_id = ANY ($1)
	)
	SELECT format('account %s user %s metric %s day %s type %s: kept %s × %s, recounted %s × %s',
	              coalesce(k.account_id, r.account_id), coalesce(k.user_id, r.user_id), coalesce(k.metric, r.metric),
	              coalesce(k.day, r.day), coalesce(k.type_id, r.type_id), k.n, k.amount, r.n, r.amount)
	  FROM kept k
	  FULL JOIN recount r ON r.account_id = k.account_id AND r.user_id = k.user_id AND r.metric = k.metric
	                     AND r.day = k.day AND r.type_id = k.type_id
	 WHERE k.n IS DISTINCT FROM r.n OR k.amount IS DISTINCT FROM r.amount
	 ORDER BY 1`

func expectRecount(t *testing.T, e *env, accounts ...int64) {
	t.Helper()
	var diff []string
	if err := e.db.Select(&diff, kpiRecount, pq.Array(accounts)); err != nil {
		t.Fatal(err)
	}
	if len(diff) > 0 {
		t.Errorf("kpi_daily differs from the records in %d rows:\n%s", len(diff), strings.Join(diff, "\n"))
	}
}

// listCountsRecount compares the list totals that the triggers keep
// (list_counts) for the five tables of kpiWriter with a count of their rows,
// and returns the counters where the two differ: counterparties while live by
// owner (module 1), tasks by assignee and by an assigner who is not the
// assignee (module 2, kinds 0 and 1), deals, documents and money movements
// by owner (modules 20, 4, 5).
// cross-account: the test's own accounts, in its own database.
const listCountsRecount = `
	WITH counted AS (
		SELECT account_id, 1 AS module, 0 AS kind, user_id AS owner, count(*) AS n
		  FROM companies WHERE account_id = ANY ($1) AND deleted_at IS NULL AND user_id IS NOT NULL GROUP BY 1, 4
		UNION ALL
		SELECT account_id, 2, 0, user_id, count(*) FROM tasks WHERE account_id = ANY ($1) GROUP BY 1, 4
		UNION ALL
		SELECT account_id, 2, 1, assigner_id, count(*) FROM tasks WHERE account_id = ANY ($1) AND assigner_id <> user_id GROUP BY 1, 4
		UNION ALL
		SELECT account_id, 20, 0, coalesce(user_id, 0), count(*) FROM deals WHERE account_id = ANY ($1) GROUP BY 1, 4
		UNION ALL
		SELECT account_id, 4, 0, coalesce(user_id, 0), count(*) FROM documents WHERE account_id = ANY ($1) GROUP BY 1, 4
		UNION ALL
		SELECT account_id, 5, 0, coalesce(user_id, 0), count(*) FROM money_movements WHERE account_id = ANY ($1) GROUP BY 1, 4
	), kept AS (
		SELECT account_id, module, kind, owner_id AS owner, sum(n) AS n
		  FROM list_counts
		 WHERE account_id = ANY ($1) AND module IN (1, 2, 4, 5, 20) AND NOT (module = 1 AND kind = 1)
		 GROUP BY 1, 2, 3, 4
		HAVING sum(n) <> 0
	)
	SELECT format('account %s module %s kind %s owner %s: kept %s, counted %s', account_id, module, kind, owner, k.n, c.n)
	  FROM counted c FULL JOIN kept k USING (account_id, module, kind, owner)
	 WHERE c.n IS DISTINCT FROM k.n
	 ORDER BY 1`

// expectListCounts fails the test where list_counts differs from the rows of
// the accounts (listCountsRecount).
func expectListCounts(t *testing.T, e *env, accounts ...int64) {
	t.Helper()
	var diff []string
	if err := e.db.Select(&diff, listCountsRecount, pq.Array(accounts)); err != nil {
		t.Fatal(err)
	}
	if len(diff) > 0 {
		t.Errorf("list_counts differs from the rows in %d counters:\n%s", len(diff), strings.Join(diff, "\n"))
	}
}

// TestKPIDailyRecount checks that the triggers of migration 0068 keep
// kpi_daily equal to a count from the records through random inserts, updates
// and deletes of the five tables, in two accounts of different time zones,
// and those of list_counts (0009, 0079) the list totals of the same rows.
func TestKPIDailyRecount(t *testing.T) {
	e := newEnv(t)
	acme := newDashWorld(t, e, "acme")
	globex := newDashWorld(t, e, "globex")
	globex.exec(t, `UPDATE accounts SET time_zone = 'Asia/Tokyo' WHERE id = $1`, globex.accountID)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	writers := []*kpiWriter{newKPIWriter(t, acme, seed), newKPIWriter(t, globex, seed+1)}

	t.Run("random writes", func(t *testing.T) {
		for round := range 4 {
			for range 150 {
				for _, k := range writers {
					k.step(t)
				}
			}
			expectRecount(t, e, acme.accountID, globex.accountID)
			expectListCounts(t, e, acme.accountID, globex.accountID)
			if t.Failed() {
				t.Fatalf("after round %d (seed %d)", round, seed)
			}
		}
		var rows int
		if err := e.db.Get(&rows, `SELECT count(*) FROM kpi_daily WHERE account_id = ANY ($1)`,
			pq.Array([]int64{acme.accountID, globex.accountID})); err != nil || rows < 50 {
			t.Fatalf("%d rows of kpi_daily (%v): too few to tell", rows, err)
		}
	})

	t.Run("a rolled back write leaves no trace", func(t *testing.T) {
		tx, err := e.db.Beginx()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`UPDATE deals SET sum = sum + 1000 WHERE account_id = $1`, acme.accountID); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		expectRecount(t, e, acme.accountID, globex.accountID)
	})

	t.Run("the account's time zone changes", func(t *testing.T) {
		acme.exec(t, `UPDATE accounts SET time_zone = 'America/New_York' WHERE id = $1`, acme.accountID)
		expectRecount(t, e, acme.accountID, globex.accountID)
		for range 100 {
			writers[0].step(t)
		}
		expectRecount(t, e, acme.accountID, globex.accountID)
	})

	t.Run("the comparison of the list totals sees a difference", func(t *testing.T) {
		acme.exec(t, `INSERT INTO list_counts (account_id, module, kind, owner_id, slot, n) VALUES ($1, 20, 0, $2, 9, 1)`,
			acme.accountID, acme.admin.id)
		var diff []string
		if err := e.db.Select(&diff, listCountsRecount, pq.Array([]int64{acme.accountID})); err != nil || len(diff) != 1 {
			t.Errorf("after one counter more: %d differences (%v), want 1", len(diff), err)
		}
	})

	t.Run("the comparison sees a difference", func(t *testing.T) {
		acme.exec(t, `UPDATE kpi_daily SET amount = amount + 1 WHERE account_id = $1 AND metric = 3
			AND (user_id, day) = (SELECT user_id, day FROM kpi_daily WHERE account_id = $1 AND metric = 3 LIMIT 1)`, acme.accountID)
		var diff []string
		if err := e.db.Select(&diff, kpiRecount, pq.Array([]int64{acme.accountID})); err != nil || len(diff) != 1 {
			t.Errorf("after one changed row: %d differences (%v), want 1", len(diff), err)
		}
	})
}

// TestKPIDailyReplies checks that the KPI read from kpi_daily (a caller in the
// account's time zone) answers exactly as the KPI counted from the records
// (any other zone) on random records: each user asks once with no zone of
// their own and once with the account's zone spelled otherwise ("europe/riga",
// the same days), which the server cannot tell is the account's.
func TestKPIDailyReplies(t *testing.T) {
	e := newEnv(t)
	w, _ := randomDashWorld(t, e, "acme", 800)
	metrics := []string{"companies_added", "tasks_done", "deals_created", "deal_sum", "invoices_issued", "invoice_sum", "income"}
	users := []user{w.admin, w.head, w.member, w.peer, w.world.other}
	for i, u := range users {
		w.rights(t, u, true, true)
		for _, month := range []string{"2026-10", "2026-11", "2026-12"} {
			for j, metric := range metrics {
				if (i+j)%3 != 0 || month == "2026-11" {
					w.kpi(t, u, month, metric, metric+" "+month, fmt.Sprint(5+(i+j)%7))
				}
			}
		}
	}
	periods := [][2]string{{"2026-11-01", "2026-11-30"}, {"2026-10-17", "2026-11-15"}, {"2026-11-20", "2026-11-20"},
		{"2026-11-19", "2026-11-21"}, {"2026-10-31", "2026-11-01"}, {"2026-10-01", "2026-12-31"}, {"2026-11-30", "2026-12-01"},
		{"2026-12-01", "2026-12-02"}, {"2026-10-30", "2026-10-31"}}
	var targets []string
	for _, p := range periods {
		targets = append(targets,
			"/dashboard/kpi/team?date_from="+p[0]+"&date_to="+p[1],
			"/dashboard/kpi/team?date_from="+p[0]+"&date_to="+p[1]+"&department_id={dept}",
			"/dashboard/kpi/my?date_from="+p[0]+"&date_to="+p[1],
			"/dashboard/my/day?date="+p[0]+"&date_to="+p[1])
	}
	// replies asks each target as u: in the account's zone (read from
	// kpi_daily) when zone is NULL, otherwise in zone. {dept} is u's
	// department (the one of the admin, who has none, is sales).
	replies := func(t *testing.T, u user, zone any) []string {
		t.Helper()
		w.exec(t, `UPDATE users SET time_zone = $2 WHERE id = $1`, u.id, zone)
		dept := w.sales
		if u == w.world.other {
			dept = w.support
		}
		var out []string
		for _, target := range targets {
			out = append(out, expectOK(t, e.get(t, u.token, strings.ReplaceAll(target, "{dept}", fmt.Sprint(dept)))))
		}
		return out
	}
	compare := func(t *testing.T) {
		t.Helper()
		for _, u := range users {
			rollup, records := replies(t, u, nil), replies(t, u, "europe/riga")
			for i, target := range targets {
				if rollup[i] != records[i] {
					t.Errorf("user %d, %s:\nfrom kpi_daily %s\nfrom the records %s", u.id, target, rollup[i], records[i])
				}
			}
		}
	}

	t.Run("the same replies", func(t *testing.T) {
		var planned int
		if err := e.db.Get(&planned, `SELECT count(*) FROM kpi_plan_items WHERE account_id = $1`, w.accountID); err != nil || planned < 50 {
			t.Fatalf("%d plan items (%v)", planned, err)
		}
		compare(t)
	})

	t.Run("after contracts became invoices", func(t *testing.T) {
		w.exec(t, `UPDATE directory_values SET is_invoice = true WHERE account_id = $1 AND id = $2`, w.accountID, w.contract)
		compare(t)
	})

	t.Run("a user's own time zone counts from the records", func(t *testing.T) {
		// One more counterparty in kpi_daily than there are: only the reply
		// in the account's zone counts it.
		w.company(t, "member's", w.member, w.client, time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC), false)
		const row = `account_id = $1 AND user_id = $2 AND metric = 1 AND day = '2026-11-20'`
		w.exec(t, `UPDATE kpi_daily SET n = n + 1 WHERE `+row, w.accountID, w.member.id)
		defer w.exec(t, `UPDATE kpi_daily SET n = n - 1 WHERE `+row, w.accountID, w.member.id)
		target := "/dashboard/kpi/my?date_from=2026-11-01&date_to=2026-11-30"
		w.exec(t, `UPDATE users SET time_zone = NULL WHERE id = $1`, w.member.id)
		rollup := expectOK(t, e.get(t, w.member.token, target))
		w.exec(t, `UPDATE users SET time_zone = 'europe/riga' WHERE id = $1`, w.member.id)
		records := expectOK(t, e.get(t, w.member.token, target))
		if rollup == records {
			t.Errorf("the same reply from a changed kpi_daily and from the records: %s", rollup)
		}
	})
}

// randomDashWorld is a dashWorld with steps random changes of kpiWriter, of a
// seed the test logs, and the writer.
func randomDashWorld(t *testing.T, e *env, name string, steps int) (*dashWorld, *kpiWriter) {
	t.Helper()
	w := newDashWorld(t, e, name)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	k := newKPIWriter(t, w, seed)
	for range steps {
		k.step(t)
	}
	return w, k
}
