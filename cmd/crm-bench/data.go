package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	crmdb "github.com/crmservice/crm/db"
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

// Generation logs its progress this often, and writes at most chunkRows rows
// per statement so that the rows done move between two reports (tests use
// smaller values, through options).
const (
	progressEvery = 3 * time.Second
	chunkRows     = 20_000
)

// directory is a directory's code and the names of its values.
type directory struct {
	code  int
	names []string
}

// directories are the directory values of every account, in the order they
// are inserted.
func directories() []directory {
	return []directory{
		{9, []string{"Client", "Key client", "Prospect", "Supplier", "Partner"}}, {10, []string{"Active", "Lost", "Sleeping"}},
		{35, []string{"Call", "Meeting", "E-mail"}}, {40, []string{"New business", "Upsell"}}, {41, []string{"Lead", "Offer", "Won", "Lost"}},
		{44, []string{"Invoice", "Contract"}}, {46, []string{"Bank transfer", "Card"}}, {47, []string{"Sales", "Rent", "Salaries"}},
	}
}

// Rows of an account besides its records: the account, two departments, 20
// users and a money account, and the directory values.
const fixedRows = 1 + 2 + 20 + 1

// accountRows is the number of rows generateAccount writes for account n.
func (d *dataSet) accountRows(n int) int64 {
	rows := fixedRows
	for _, dir := range directories() {
		rows += len(dir.names)
	}
	// Each counterparty has two e-mails and two phones.
	return int64(rows + 5*d.Companies[n] + d.Tasks[n] + d.Deals[n] + d.Documents[n] + d.Movements[n])
}

// generate creates the accounts and their records. Secondary indexes are
// dropped during the load and built afterwards, which is several times faster
// than maintaining them row by row. Each of the three phases logs its progress
// every few seconds.
func generate(ctx context.Context, db *sqlx.DB, log *slog.Logger, d *dataSet, o options) error {
	tables := []string{"companies", "company_names", "emails", "phones", "tasks", "deals", "documents", "money_movements"}
	indexes, err := dropIndexes(ctx, db, tables)
	if err != nil {
		return err
	}
	var total int64
	for i := range d.Companies {
		total += d.accountRows(i)
	}
	// Citus refuses to switch off the triggers of distributed tables; its data
	// set is small enough for them.
	citus, err := crmdb.IsCitus(ctx, db)
	if err != nil {
		return err
	}
	bulk := !citus && !o.rowTriggers
	p := startProgress(log, o.progressEvery, "generating rows", "rows", 1, total)
	for i := range d.Companies {
		acc, err := generateAccount(ctx, db, i, d, p, o.chunkRows, bulk)
		if err != nil {
			p.stop(false)
			return fmt.Errorf("account %d: %w", i+1, err)
		}
		d.Accounts = append(d.Accounts, acc)
	}
	p.stop(true)
	if err := rebuildIndexes(ctx, db, log, o.progressEvery, indexes); err != nil {
		return err
	}
	return vacuum(ctx, db, log, o.progressEvery)
}

// index is a secondary index dropped for the load.
type index struct {
	Name  string `db:"indexname"`
	Table string `db:"tablename"`
	Def   string `db:"indexdef"`
}

// dropIndexes drops the non-unique indexes of the tables and returns them
// (unique ones back primary keys and foreign keys).
func dropIndexes(ctx context.Context, db *sqlx.DB, tables []string) ([]index, error) {
	var idx []index
	err := db.SelectContext(ctx, &idx, `
		SELECT indexname, tablename, indexdef FROM pg_indexes
		 WHERE schemaname = 'public' AND tablename = ANY ($1) AND indexdef NOT LIKE 'CREATE UNIQUE%'
		 ORDER BY tablename, indexname`, pq.Array(tables))
	if err != nil {
		return nil, err
	}
	for _, i := range idx {
		// cross-account: DDL on the whole table, in the benchmark's own database.
		if _, err := db.ExecContext(ctx, `DROP INDEX `+pq.QuoteIdentifier(i.Name)); err != nil {
			return nil, err
		}
	}
	return idx, nil
}

// rebuildIndexes creates the dropped indexes again. Progress counts the size
// of each index's table, which is what building it reads.
func rebuildIndexes(ctx context.Context, db *sqlx.DB, log *slog.Logger, every time.Duration, indexes []index) error {
	sizes := map[string]int64{}
	var total int64
	for _, i := range indexes {
		if _, ok := sizes[i.Table]; !ok {
			var size int64
			if err := db.GetContext(ctx, &size, `SELECT pg_table_size($1::regclass)`, i.Table); err != nil {
				return fmt.Errorf("size of %s: %w", i.Table, err)
			}
			sizes[i.Table] = size
		}
		total += sizes[i.Table]
	}
	p := startProgress(log, every, "rebuilding indexes", "MB", 1<<20, total)
	for n, i := range indexes {
		p.at(fmt.Sprintf("index %d of %d: %s", n+1, len(indexes), i.Name))
		// cross-account: DDL on the whole table, in the benchmark's own database.
		if _, err := db.ExecContext(ctx, i.Def); err != nil {
			p.stop(false)
			return fmt.Errorf("rebuild index: %w\n%s", err, i.Def)
		}
		p.add(sizes[i.Table])
	}
	p.stop(true)
	return nil
}

// vacuum vacuums and analyses the schema's tables one by one, largest first.
// VACUUM sets the visibility map, so counts and index scans stay index-only.
func vacuum(ctx context.Context, db *sqlx.DB, log *slog.Logger, every time.Duration) error {
	var tables []struct {
		Name string `db:"name"`
		Size int64  `db:"size"`
	}
	err := db.SelectContext(ctx, &tables, `
		SELECT c.relname AS name, pg_table_size(c.oid) AS size FROM pg_class c
		 WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
		 ORDER BY size DESC, name`)
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	var total int64
	for _, t := range tables {
		total += t.Size
	}
	p := startProgress(log, every, "vacuuming", "MB", 1<<20, total)
	for n, t := range tables {
		p.at(fmt.Sprintf("table %d of %d: %s", n+1, len(tables), t.Name))
		// cross-account: maintenance of the whole table, in the benchmark's own database.
		if _, err := db.ExecContext(ctx, `VACUUM ANALYZE `+pq.QuoteIdentifier(t.Name)); err != nil {
			p.stop(false)
			return fmt.Errorf("vacuum %s: %w", t.Name, err)
		}
		p.add(t.Size)
	}
	p.stop(true)
	return nil
}

// inChunks runs stmt for i from 1 to n in ranges of at most chunk/perI,
// passing each range's ends as the two parameters after args, and counts perI
// rows of progress per i.
func inChunks(ctx context.Context, tx *sqlx.Tx, p *progress, chunk, n, perI int, stmt string, args ...any) error {
	size := max(1, chunk/perI)
	for lo := 1; lo <= n; lo += size {
		hi := min(lo+size-1, n)
		if _, err := tx.ExecContext(ctx, stmt, append(slices.Clip(args), lo, hi)...); err != nil {
			return err
		}
		p.add(int64((hi - lo + 1) * perI))
	}
	return nil
}

// generateAccount writes account n in one transaction. Every statement names
// the account as its parameter $1.
//
// With bulk set, the triggers that keep list_counts, company_names and
// kpi_daily are off while it loads, and fillDerived stores what they would
// have.
func generateAccount(ctx context.Context, db *sqlx.DB, n int, d *dataSet, p *progress, chunk int, bulk bool) (int64, error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	at := func(what string) { p.at(fmt.Sprintf("account %d of %d: %s", n+1, len(d.Companies), what)) }
	at("users and directories")
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
	var moneyAccount int64
	if err := tx.GetContext(ctx, &moneyAccount, `INSERT INTO money_accounts (account_id, name, currency) VALUES ($1, 'Main', 'EUR') RETURNING id`, acc); err != nil {
		return 0, fmt.Errorf("money account: %w", err)
	}
	p.add(fixedRows)
	dirs := map[int][]int64{}
	for _, dir := range directories() {
		var ids []int64
		err := tx.SelectContext(ctx, &ids, `
			INSERT INTO directory_values (account_id, directory_code, name, sort, is_invoice)
			SELECT $1, $2::smallint, v, o, $2::smallint = 44 AND v = 'Invoice' FROM unnest($3::text[]) WITH ORDINALITY AS x (v, o) ORDER BY o RETURNING id`,
			acc, dir.code, pq.Array(dir.names))
		if err != nil {
			return 0, fmt.Errorf("directory %d: %w", dir.code, err)
		}
		dirs[dir.code] = ids
		p.add(int64(len(ids)))
	}

	nc := d.Companies[n]
	if bulk {
		if err := setTriggers(ctx, tx, "DISABLE"); err != nil {
			return 0, err
		}
	}
	at("counterparties")
	err = inChunks(ctx, tx, p, chunk, nc, 1, `
		INSERT INTO companies (account_id, name, person, address, city, country, type_id, status_id, user_id, created_via, created_at)
		SELECT $1,
		       ($2::text[])[1 + i % 20] || ' ' || ($3::text[])[1 + (i / 20) % 15]
		         || CASE WHEN i % 300 = 0 THEN ' Zephyr' WHEN i % 30 = 0 THEN ' Nordic' ELSE '' END || ' ' || i,
		       1 + (i % 10 = 0)::int, i || ' Harbour Street', ($4::text[])[1 + i % 12], 'Latvia',
		       ($5::bigint[])[1 + i % 5], ($6::bigint[])[1 + i % 3], ($7::bigint[])[1 + i % 20], 'import',
		       now() - ($8 - i) * interval '37 seconds'
		  FROM generate_series($9::int, $10::int) i ORDER BY i`, acc, pq.Array(nameFirst), pq.Array(nameSecond), pq.Array(cities),
		pq.Array(dirs[9]), pq.Array(dirs[10]), pq.Array(users), nc)
	if err != nil {
		return 0, fmt.Errorf("companies: %w", err)
	}
	// The ids of the account's counterparties are consecutive (nothing else
	// writes to the database meanwhile); the first is the smallest.
	var first int64
	if err := tx.GetContext(ctx, &first, `SELECT min(c.id) FROM companies c WHERE c.account_id = $1`, acc); err != nil {
		return 0, err
	}
	steps := []struct {
		what string
		n    int // rows i of generate_series, or counterparties by number
		perI int // rows per i
		sql  string
		args []any
	}{
		{"e-mails", nc, 2, `INSERT INTO emails (account_id, company_id, email)
			SELECT $1, c.id, e || c.id || '@company' || c.id || '.example' FROM companies c, unnest(ARRAY['info', 'sales']) e
			 WHERE c.account_id = $1 AND c.id BETWEEN $2::bigint + $3 - 1 AND $2::bigint + $4 - 1`, []any{acc, first}},
		{"phones", nc, 2, `INSERT INTO phones (account_id, company_id, phone, descr)
			SELECT $1, c.id, p || lpad((c.id % 10000000)::text, 7, '0'), d FROM companies c,
			       unnest(ARRAY['+371 2', '+372 5'], ARRAY['mobile', 'reception']) AS x (p, d)
			 WHERE c.account_id = $1 AND c.id BETWEEN $2::bigint + $3 - 1 AND $2::bigint + $4 - 1`, []any{acc, first}},
		{"tasks", d.Tasks[n], 1, `INSERT INTO tasks (account_id, company_id, note, type_id, status_id, user_id, assigner_id, date_start, date_finish, done_at)
			SELECT $1, $2 + i % $3, 'Task ' || i, ($4::bigint[])[1 + i % 3], 1 + (i % 2), ($5::bigint[])[1 + i % 20],
			       ($5::bigint[])[1 + (i / 7) % 20], s, s + interval '1 hour', CASE WHEN i % 2 = 1 THEN s + interval '2 hours' END
			  FROM generate_series($7::int, $8::int) i, LATERAL (SELECT now() - interval '365 days' + i * (interval '730 days' / $6::int)) AS t (s)`,
			[]any{acc, first, nc, pq.Array(dirs[35]), pq.Array(users), d.Tasks[n]}},
		{"deals", d.Deals[n], 1, `INSERT INTO deals (account_id, name, company_id, type_id, status_id, user_id, date_start, date_finish, sum)
			SELECT $1, 'Deal ' || i, $2 + i % $3, ($4::bigint[])[1 + i % 2], ($5::bigint[])[1 + i % 4], ($6::bigint[])[1 + i % 20],
			       s::date, s::date + 30, (i % 1000) * 10.5
			  FROM generate_series($8::int, $9::int) i, LATERAL (SELECT now() - interval '365 days' + i * (interval '730 days' / $7::int)) AS t (s)`,
			[]any{acc, first, nc, pq.Array(dirs[40]), pq.Array(dirs[41]), pq.Array(users), d.Deals[n]}},
		{"documents", d.Documents[n], 1, `INSERT INTO documents (account_id, number, date, sum, type_id, user_id, company_id)
			SELECT $1, 'D-' || i, (now() - interval '365 days' + i * (interval '730 days' / $6::int))::date, (i % 700) * 3.25,
			       ($2::bigint[])[1 + i % 2], ($3::bigint[])[1 + i % 20], $4 + i % $5
			  FROM generate_series($7::int, $8::int) i`,
			[]any{acc, pq.Array(dirs[44]), pq.Array(users), first, nc, d.Documents[n]}},
		{"money", d.Movements[n], 1, `INSERT INTO money_movements (account_id, date, sum, sum_currency, direction, type_id, category_id, money_account_id, user_id, company_id)
			SELECT $1, (now() - interval '365 days' + i * (interval '730 days' / $8::int))::date, (i % 900) * 1.75, (i % 900) * 1.75,
			       1 + (i % 3 = 0)::int, ($2::bigint[])[1 + i % 2], ($3::bigint[])[1 + i % 3], $4, ($5::bigint[])[1 + i % 20], $6 + i % $7
			  FROM generate_series($9::int, $10::int) i`,
			[]any{acc, pq.Array(dirs[46]), pq.Array(dirs[47]), moneyAccount, pq.Array(users), first, nc, d.Movements[n]}},
	}
	for _, st := range steps {
		at(st.what)
		if err := inChunks(ctx, tx, p, chunk, st.n, st.perI, st.sql, st.args...); err != nil {
			return 0, fmt.Errorf("%s: %w", st.what, err)
		}
	}
	if bulk {
		at("counts and names")
		if err := fillDerived(ctx, tx, acc); err != nil {
			return 0, err
		}
		if err := setTriggers(ctx, tx, "ENABLE"); err != nil {
			return 0, err
		}
	}
	return acc, tx.Commit()
}

// derivedTables are the tables whose triggers keep list_counts, company_names
// and kpi_daily; the load switches them off and fills them in bulk, because a
// row trigger that updates one counter row per inserted row makes a chain of
// versions of that row in the loading transaction, which every next update
// walks: the load slowed down as it went (from 4,000 counterparties a second
// to under 1,000 after 300,000).
var derivedTables = []string{"companies", "tasks", "deals", "documents", "money_movements"}

// setTriggers enables or disables the user triggers of derivedTables (the
// foreign keys' triggers are the system's and stay).
func setTriggers(ctx context.Context, tx *sqlx.Tx, how string) error {
	for _, table := range derivedTables {
		// cross-account: DDL on the whole table, in the benchmark's own database.
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+table+` `+how+` TRIGGER USER`); err != nil {
			return fmt.Errorf("%s triggers of %s: %w", strings.ToLower(how), table, err)
		}
	}
	return nil
}

// fillDerived stores what the switched-off triggers would have stored for the
// rows of account acc: the counters of list_counts (db/migrations/0009 and
// 0065: module, kind, owner), the lower-cased names of company_names (0066)
// and the KPI by day of kpi_daily (0068, through its own recount).
func fillDerived(ctx context.Context, tx *sqlx.Tx, acc int64) error {
	for _, stmt := range []string{
		`INSERT INTO list_counts (account_id, module, kind, owner_id, slot, n)
		 SELECT $1, 1, 0, user_id, 0, count(*) FROM companies WHERE account_id = $1 AND deleted_at IS NULL GROUP BY user_id
		 UNION ALL
		 SELECT $1, 2, 0, user_id, 0, count(*) FROM tasks WHERE account_id = $1 GROUP BY user_id
		 UNION ALL
		 SELECT $1, 2, 1, assigner_id, 0, count(*) FROM tasks WHERE account_id = $1 AND assigner_id <> user_id GROUP BY assigner_id
		 UNION ALL
		 SELECT $1, 20, 0, coalesce(user_id, 0), 0, count(*) FROM deals WHERE account_id = $1 GROUP BY 4
		 UNION ALL
		 SELECT $1, 4, 0, coalesce(user_id, 0), 0, count(*) FROM documents WHERE account_id = $1 GROUP BY 4
		 UNION ALL
		 SELECT $1, 5, 0, coalesce(user_id, 0), 0, count(*) FROM money_movements WHERE account_id = $1 GROUP BY 4`,
		`INSERT INTO company_names (account_id, id, user_id, name_lc)
		 SELECT account_id, id, user_id, lower(name) FROM companies WHERE account_id = $1 AND deleted_at IS NULL`,
		`SELECT kpi_daily_fill($1)`,
	} {
		if _, err := tx.ExecContext(ctx, stmt, acc); err != nil {
			return fmt.Errorf("derived rows: %w", err)
		}
	}
	return nil
}
