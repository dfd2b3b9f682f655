package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// dataSet describes the generated data: accounts[0] is the big account.
type dataSet struct {
	Accounts  []int64
	Companies []int // per account
	Tasks     []int
	Deals     []int
	Documents []int
	Movements []int
}

// plan returns how many records each account gets: the big account holds half
// of the counterparties, the others share the rest.
func plan(accounts, companies int) dataSet {
	var d dataSet
	for i := range accounts {
		n := companies / 2
		if i > 0 {
			n = (companies - companies/2) / (accounts - 1)
		}
		d.Companies = append(d.Companies, n)
		d.Tasks = append(d.Tasks, n*2/5)
		d.Deals = append(d.Deals, n/5)
		d.Documents = append(d.Documents, n/5)
		d.Movements = append(d.Movements, n*2/5)
	}
	return d
}

// Words of generated counterparty names. Every 300th name has "Zephyr" (a rare
// word: 0.3 % of the names) and every 30th "Nordic" (a frequent one: 3.3 %).
var (
	nameFirst = []string{"Amber", "Baltic", "Coastal", "Dune", "Eastern", "Forest", "Granite", "Harbor", "Iron",
		"Juniper", "Kestrel", "Linden", "Meadow", "Northern", "Oak", "Pine", "Quay", "River", "Silver", "Tidal"}
	nameSecond = []string{"Trading", "Systems", "Foods", "Logistics", "Dental", "Media", "Retail", "Pharma",
		"Consulting", "Builders", "Textiles", "Energy", "Motors", "Studio", "Partners"}
	cities = []string{"Riga", "Tallinn", "Vilnius", "Helsinki", "Stockholm", "Oslo", "Copenhagen", "Gdansk",
		"Tartu", "Kaunas", "Turku", "Uppsala"}
)

// generate creates the accounts and their records. Secondary indexes are
// dropped during the load and built afterwards, which is several times faster
// than maintaining them row by row.
func generate(ctx context.Context, db *sqlx.DB, log *slog.Logger, d *dataSet) error {
	tables := []string{"companies", "emails", "phones", "tasks", "deals", "documents", "money_movements"}
	indexes, err := dropIndexes(ctx, db, tables)
	if err != nil {
		return err
	}
	for i := range d.Companies {
		start := time.Now()
		acc, err := generateAccount(ctx, db, i, d)
		if err != nil {
			return fmt.Errorf("account %d: %w", i+1, err)
		}
		d.Accounts = append(d.Accounts, acc)
		if i == 0 || i == len(d.Companies)-1 {
			log.Info("generated account", "n", i+1, "companies", d.Companies[i], "took", time.Since(start).Round(time.Millisecond))
		}
	}
	start := time.Now()
	for _, def := range indexes {
		if _, err := db.ExecContext(ctx, def); err != nil {
			return fmt.Errorf("rebuild index: %w\n%s", err, def)
		}
	}
	log.Info("rebuilt indexes", "n", len(indexes), "took", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	// VACUUM sets the visibility map, so counts and index scans stay index-only.
	if _, err := db.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
		return err
	}
	log.Info("vacuumed", "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// dropIndexes drops the non-unique indexes of the tables and returns their
// definitions (unique ones back primary keys and foreign keys).
func dropIndexes(ctx context.Context, db *sqlx.DB, tables []string) ([]string, error) {
	var idx []struct {
		Name string `db:"indexname"`
		Def  string `db:"indexdef"`
	}
	err := db.SelectContext(ctx, &idx, `
		SELECT indexname, indexdef FROM pg_indexes
		 WHERE schemaname = 'public' AND tablename = ANY ($1) AND indexdef NOT LIKE 'CREATE UNIQUE%'`, pq.Array(tables))
	if err != nil {
		return nil, err
	}
	var defs []string
	for _, i := range idx {
		if _, err := db.ExecContext(ctx, `DROP INDEX `+pq.QuoteIdentifier(i.Name)); err != nil {
			return nil, err
		}
		defs = append(defs, i.Def)
	}
	return defs, nil
}

func generateAccount(ctx context.Context, db *sqlx.DB, n int, d *dataSet) (int64, error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var acc int64
	if err := tx.GetContext(ctx, &acc, `INSERT INTO accounts (name, base_currency, time_zone) VALUES ($1, 'EUR', 'Europe/Riga') RETURNING id`,
		fmt.Sprintf("Bench %02d", n+1)); err != nil {
		return 0, err
	}
	var depts []int64
	if err := tx.SelectContext(ctx, &depts, `INSERT INTO departments (account_id, name) VALUES ($1, 'Sales'), ($1, 'Key accounts') RETURNING id`, acc); err != nil {
		return 0, err
	}
	// 20 users: an admin, a head per department and members split over both.
	var users []int64
	err = tx.SelectContext(ctx, &users, `
		INSERT INTO users (account_id, name, login, role, department_id)
		SELECT $1, 'User ' || u, 'user' || u || '@bench.example',
		       CASE WHEN u = 1 THEN 'admin' WHEN u <= 3 THEN 'head' ELSE 'member' END,
		       CASE WHEN u = 1 THEN NULL ELSE ($2::bigint[])[1 + u % 2] END
		  FROM generate_series(1, 20) u ORDER BY u RETURNING id`, acc, pq.Array(depts))
	if err != nil {
		return 0, fmt.Errorf("users: %w", err)
	}
	dirs := map[int][]int64{}
	for code, names := range map[int][]string{
		9: {"Client", "Key client", "Prospect", "Supplier", "Partner"}, 10: {"Active", "Lost", "Sleeping"},
		35: {"Call", "Meeting", "E-mail"}, 40: {"New business", "Upsell"}, 41: {"Lead", "Offer", "Won", "Lost"},
		44: {"Invoice", "Contract"}, 46: {"Bank transfer", "Card"}, 47: {"Sales", "Rent", "Salaries"},
	} {
		var ids []int64
		err := tx.SelectContext(ctx, &ids, `
			INSERT INTO directory_values (account_id, directory_code, name, sort, is_invoice)
			SELECT $1, $2::smallint, v, o, $2::smallint = 44 AND v = 'Invoice' FROM unnest($3::text[]) WITH ORDINALITY AS x (v, o) ORDER BY o RETURNING id`,
			acc, code, pq.Array(names))
		if err != nil {
			return 0, fmt.Errorf("directory %d: %w", code, err)
		}
		dirs[code] = ids
	}

	nc := d.Companies[n]
	_, err = tx.ExecContext(ctx, `
		INSERT INTO companies (account_id, name, person, address, city, country, type_id, status_id, user_id, created_via, created_at)
		SELECT $1,
		       ($2::text[])[1 + i % 20] || ' ' || ($3::text[])[1 + (i / 20) % 15]
		         || CASE WHEN i % 300 = 0 THEN ' Zephyr' WHEN i % 30 = 0 THEN ' Nordic' ELSE '' END || ' ' || i,
		       1 + (i % 10 = 0)::int, i || ' Harbour Street', ($4::text[])[1 + i % 12], 'Latvia',
		       ($5::bigint[])[1 + i % 5], ($6::bigint[])[1 + i % 3], ($7::bigint[])[1 + i % 20], 'import',
		       now() - ($8 - i) * interval '37 seconds'
		  FROM generate_series(1, $8::int) i ORDER BY i`, acc, pq.Array(nameFirst), pq.Array(nameSecond), pq.Array(cities),
		pq.Array(dirs[9]), pq.Array(dirs[10]), pq.Array(users), nc)
	if err != nil {
		return 0, fmt.Errorf("companies: %w", err)
	}
	// The ids of one statement are consecutive; the first is the smallest.
	var first int64
	if err := tx.GetContext(ctx, &first, `SELECT min(id) FROM companies WHERE account_id = $1`, acc); err != nil {
		return 0, err
	}
	steps := []struct {
		what string
		sql  string
		args []any
	}{
		{"e-mails", `INSERT INTO emails (account_id, company_id, email)
			SELECT $1, id, e || id || '@company' || id || '.example' FROM companies, unnest(ARRAY['info', 'sales']) e
			 WHERE account_id = $1`, []any{acc}},
		{"phones", `INSERT INTO phones (account_id, company_id, phone, descr)
			SELECT $1, id, p || lpad((id % 10000000)::text, 7, '0'), d FROM companies,
			       unnest(ARRAY['+371 2', '+372 5'], ARRAY['mobile', 'reception']) AS x (p, d)
			 WHERE account_id = $1`, []any{acc}},
		{"tasks", `INSERT INTO tasks (account_id, company_id, note, type_id, status_id, user_id, assigner_id, date_start, date_finish, done_at)
			SELECT $1, $2 + i % $3, 'Task ' || i, ($4::bigint[])[1 + i % 3], 1 + (i % 2), ($5::bigint[])[1 + i % 20],
			       ($5::bigint[])[1 + (i / 7) % 20], s, s + interval '1 hour', CASE WHEN i % 2 = 1 THEN s + interval '2 hours' END
			  FROM generate_series(1, $6::int) i, LATERAL (SELECT now() - interval '365 days' + i * (interval '730 days' / $6)) AS t (s)`,
			[]any{acc, first, nc, pq.Array(dirs[35]), pq.Array(users), d.Tasks[n]}},
		{"deals", `INSERT INTO deals (account_id, name, company_id, type_id, status_id, user_id, date_start, date_finish, sum)
			SELECT $1, 'Deal ' || i, $2 + i % $3, ($4::bigint[])[1 + i % 2], ($5::bigint[])[1 + i % 4], ($6::bigint[])[1 + i % 20],
			       s::date, s::date + 30, (i % 1000) * 10.5
			  FROM generate_series(1, $7::int) i, LATERAL (SELECT now() - interval '365 days' + i * (interval '730 days' / $7)) AS t (s)`,
			[]any{acc, first, nc, pq.Array(dirs[40]), pq.Array(dirs[41]), pq.Array(users), d.Deals[n]}},
		{"documents", `INSERT INTO documents (account_id, number, date, sum, type_id, user_id, company_id)
			SELECT $1, 'D-' || i, (now() - interval '365 days' + i * (interval '730 days' / $6))::date, (i % 700) * 3.25,
			       ($2::bigint[])[1 + i % 2], ($3::bigint[])[1 + i % 20], $4 + i % $5
			  FROM generate_series(1, $6::int) i`,
			[]any{acc, pq.Array(dirs[44]), pq.Array(users), first, nc, d.Documents[n]}},
		{"money", `WITH ma AS (INSERT INTO money_accounts (account_id, name, currency) VALUES ($1, 'Main', 'EUR') RETURNING id)
			INSERT INTO money_movements (account_id, date, sum, sum_currency, direction, type_id, category_id, money_account_id, user_id, company_id)
			SELECT $1, (now() - interval '365 days' + i * (interval '730 days' / $7))::date, (i % 900) * 1.75, (i % 900) * 1.75,
			       1 + (i % 3 = 0)::int, ($2::bigint[])[1 + i % 2], ($3::bigint[])[1 + i % 3], ma.id, ($4::bigint[])[1 + i % 20], $5 + i % $6
			  FROM generate_series(1, $7::int) i, ma`,
			[]any{acc, pq.Array(dirs[46]), pq.Array(dirs[47]), pq.Array(users), first, nc, d.Movements[n]}},
	}
	for _, st := range steps {
		if _, err := tx.ExecContext(ctx, st.sql, st.args...); err != nil {
			return 0, fmt.Errorf("%s: %w", st.what, err)
		}
	}
	return acc, tx.Commit()
}
