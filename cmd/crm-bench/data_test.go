package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/db/dbtest"
)

// TestGenerate generates a small data set in chunks of a few rows, logging its
// progress every millisecond, and checks the stored rows and the log.
func TestGenerate(t *testing.T) {
	// Needs a database of its own: generates the benchmark data set into a database of its own.
	dbtest.RequireOwnDatabase(t)
	pool := dbtest.New(t)
	ctx := context.Background()
	countIndexes := func() int {
		var n int
		if err := pool.Get(&n, `SELECT count(*) FROM pg_indexes WHERE schemaname = 'public'`); err != nil {
			t.Fatal(err)
		}
		return n
	}
	indexes := countIndexes()
	var logged bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	d := plan(3, 600)
	if err := generate(ctx, pool, log, &d, options{progressEvery: time.Millisecond, chunkRows: 37}); err != nil {
		t.Fatal(err)
	}
	if n := countIndexes(); n != indexes {
		t.Errorf("%d indexes after generating, %d before", n, indexes)
	}

	// Every account has its planned records, each counterparty two e-mails and
	// two phones, whatever the chunks.
	var want int64
	for i, acc := range d.Accounts {
		want += d.accountRows(i)
		var got struct {
			Companies      int `db:"companies"`
			Emails         int `db:"emails"`
			EmailCompanies int `db:"email_companies"`
			Phones         int `db:"phones"`
			PhoneCompanies int `db:"phone_companies"`
			Tasks          int `db:"tasks"`
			Deals          int `db:"deals"`
			Documents      int `db:"documents"`
			Movements      int `db:"movements"`
		}
		err := pool.Get(&got, `
			SELECT (SELECT count(*) FROM companies WHERE account_id = $1) AS companies,
			       (SELECT count(*) FROM emails WHERE account_id = $1) AS emails,
			       (SELECT count(DISTINCT company_id) FROM emails WHERE account_id = $1) AS email_companies,
			       (SELECT count(*) FROM phones WHERE account_id = $1) AS phones,
			       (SELECT count(DISTINCT company_id) FROM phones WHERE account_id = $1) AS phone_companies,
			       (SELECT count(*) FROM tasks WHERE account_id = $1) AS tasks,
			       (SELECT count(*) FROM deals WHERE account_id = $1) AS deals,
			       (SELECT count(*) FROM documents WHERE account_id = $1) AS documents,
			       (SELECT count(*) FROM money_movements WHERE account_id = $1) AS movements`, acc)
		if err != nil {
			t.Fatal(err)
		}
		nc := d.Companies[i]
		if got.Companies != nc || got.Emails != 2*nc || got.EmailCompanies != nc || got.Phones != 2*nc || got.PhoneCompanies != nc ||
			got.Tasks != d.Tasks[i] || got.Deals != d.Deals[i] || got.Documents != d.Documents[i] || got.Movements != d.Movements[i] {
			t.Errorf("account %d: %+v, want %d counterparties with 2 e-mails and 2 phones each, %d tasks, %d deals, %d documents, %d movements",
				acc, got, nc, d.Tasks[i], d.Deals[i], d.Documents[i], d.Movements[i])
		}
	}
	// The counters and names the load fills in bulk, with its triggers off,
	// are those the triggers store: the same plan loaded with the row
	// triggers on, into a database of its own, holds the same list_counts
	// (summed over the slots) and company_names.
	twin := dbtest.New(t)
	dt := plan(3, 600)
	if err := generate(ctx, twin, slog.New(slog.DiscardHandler), &dt, options{progressEvery: time.Hour, chunkRows: 37, rowTriggers: true}); err != nil {
		t.Fatal(err)
	}
	derived := func(db *sqlx.DB) string {
		t.Helper()
		var out string
		err := db.Get(&out, `
			SELECT coalesce(string_agg(r, E'\n' ORDER BY r), '') FROM (
				SELECT format('list_counts account %s module %s kind %s owner %s: %s', account_id, module, kind, owner_id, sum(n)) AS r
				  FROM list_counts GROUP BY account_id, module, kind, owner_id HAVING sum(n) <> 0
				UNION ALL
				SELECT format('company_names %s %s: %s, user %s', account_id, id, name_lc, user_id) FROM company_names) x`)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if bulk, rows := derived(pool), derived(twin); bulk != rows || bulk == "" {
		t.Errorf("derived rows of the bulk load differ from the row triggers':\n--- bulk\n%s\n--- triggers\n%s", bulk, rows)
	}
	// kpi_daily is filled by its own recount (kpi_daily_fill); its days
	// follow now(), which moves between two loads, so it is held to the
	// records instead.
	for _, acc := range d.Accounts {
		var wrong []string
		err := pool.Select(&wrong, `
			SELECT format('kpi_daily user %s metric %s day %s type %s: %s × %s counted, %s × %s stored',
			              coalesce(w.user_id, k.user_id), coalesce(w.metric, k.metric), coalesce(w.day, k.day),
			              coalesce(w.type_id, k.type_id), w.n, w.amount, k.n, k.amount)
			  FROM (SELECT c.user_id, 1 AS metric, (c.created_at AT TIME ZONE 'Europe/Riga')::date AS day, 0::bigint AS type_id,
			               count(*) AS n, 0::numeric AS amount
			          FROM companies c WHERE c.account_id = $1 AND c.deleted_at IS NULL GROUP BY 1, 3
			        UNION ALL
			        SELECT t.user_id, 2, (t.done_at AT TIME ZONE 'Europe/Riga')::date, 0, count(*), 0
			          FROM tasks t WHERE t.account_id = $1 AND t.done_at IS NOT NULL GROUP BY 1, 3
			        UNION ALL
			        SELECT d.user_id, 3, (d.created_at AT TIME ZONE 'Europe/Riga')::date, 0, count(*), sum(d.sum)
			          FROM deals d WHERE d.account_id = $1 GROUP BY 1, 3
			        UNION ALL
			        SELECT d.user_id, 4, d.date, d.type_id, count(*), sum(d.sum) FROM documents d WHERE d.account_id = $1 GROUP BY 1, 3, 4
			        UNION ALL
			        SELECT m.user_id, 5, m.date, 0, count(*), sum(m.sum)
			          FROM money_movements m WHERE m.account_id = $1 AND m.direction = 1 AND NOT m.is_transfer GROUP BY 1, 3) w
			  FULL JOIN (SELECT * FROM kpi_daily WHERE account_id = $1) k
			    ON k.user_id = w.user_id AND k.metric = w.metric AND k.day = w.day AND k.type_id = w.type_id
			 WHERE k.n IS DISTINCT FROM w.n OR k.amount IS DISTINCT FROM w.amount`, acc)
		if err != nil {
			t.Fatal(err)
		}
		if len(wrong) > 0 {
			t.Errorf("account %d: derived rows differ from the records:\n%s", acc, strings.Join(wrong, "\n"))
		}
	}

	var stored int64
	err := pool.Get(&stored, `
		SELECT (SELECT count(*) FROM accounts) + (SELECT count(*) FROM departments) + (SELECT count(*) FROM users)
		     + (SELECT count(*) FROM directory_values) + (SELECT count(*) FROM companies) + (SELECT count(*) FROM emails)
		     + (SELECT count(*) FROM phones) + (SELECT count(*) FROM tasks) + (SELECT count(*) FROM deals)
		     + (SELECT count(*) FROM documents) + (SELECT count(*) FROM money_accounts) + (SELECT count(*) FROM money_movements)`)
	if err != nil {
		t.Fatal(err)
	}
	if stored != want {
		t.Errorf("%d rows stored, the plan says %d", stored, want)
	}

	// The log: reports of rows done of the planned total that never go back,
	// with a rate and the time left, then a line per phase done.
	var reports, between int
	var last float64
	phases := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		msg, _ := rec["msg"].(string)
		if name, ok := strings.CutSuffix(msg, ": done"); ok {
			phases[name], _ = rec["total"].(float64)
			continue
		}
		if msg != "generating rows" {
			continue
		}
		reports++
		done, of := rec["done"].(float64), rec["of"].(float64)
		_, hasLeft := rec["left"]
		_, hasRate := rec["per_second"]
		at, _ := rec["at"].(string)
		if of != float64(want) || done < last || done > of || !hasLeft || !hasRate || rec["unit"] != "rows" || !(strings.HasPrefix(at, "account ") || done == 0 && at == "starting") {
			t.Errorf("report %s, want rows done from %v up to %d, a rate, the time left and the account", line, last, want)
		}
		if done > 0 && done < of {
			between++
		}
		last = done
	}
	if reports == 0 || between == 0 {
		t.Errorf("%d reports, %d of them between the start and the end:\n%s", reports, between, logged.String())
	}
	if phases["generating rows"] != float64(want) {
		t.Errorf("generating rows: done with %v rows, want %d", phases["generating rows"], want)
	}
	for _, name := range []string{"rebuilding indexes", "vacuuming"} {
		if _, ok := phases[name]; !ok {
			t.Errorf("no line %q", name+": done")
		}
	}
}
