package impl

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	crmdb "github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/gen"
)

// TestFastListWritesNamesAfterThePage checks which pages of the fast list
// leave marks for the names of their records' users, counterparties, deals
// and directory values (two statements: the page, then its maps and total),
// and which still write the page again with the maps (three).
func TestFastListWritesNamesAfterThePage(t *testing.T) {
	server := &Server{fastPath: true}
	member := &Principal{AccountID: 1, UserID: 2, Role: RoleMember}
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name   string
		module int
		params gen.CommonListPagingParams
		splice bool
		maps   []string
	}{
		{"tasks", ModuleTasks, gen.CommonListPagingParams{Columns: str("id,note,status,date_start,user_name,company_name")}, true, []string{"companies", "users"}},
		{"deals", ModuleDeals, gen.CommonListPagingParams{Columns: str("id,name,sum,status,company_name,user_name")}, true, []string{"companies", "dirs", "users"}},
		{"deals sorted by owner", ModuleDeals, gen.CommonListPagingParams{Columns: str("id,company_name,user_name"), SortingColumn: str("user_name")}, true, []string{"companies"}},
		{"documents' deal", ModuleDocuments, gen.CommonListPagingParams{Columns: str("id,deal")}, true, []string{"deals"}},
		// The counterparty's type comes by the counterparty's row.
		{"deals with the counterparty's type", ModuleDeals, gen.CommonListPagingParams{Columns: str("id,company_name,company_type")}, false, nil},
		// A money account is an object of two fields.
		{"money", ModuleFinance, gen.CommonListPagingParams{Columns: str("id,account,company_name")}, false, nil},
		// Users and directory values alone are read whole before the page.
		{"tasks without a counterparty", ModuleTasks, gen.CommonListPagingParams{Columns: str("id,user_name,type")}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := server.newListQuery(context.Background(), member, listModules[tc.module], tc.params)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := r.fastCall()
			if err != nil {
				t.Fatal(err)
			}
			maps := slices.Sorted(slices.Values(plan.maps))
			if plan.splice != tc.splice || tc.splice && (plan.value != "" || !plan.onePass || !slices.Equal(maps, tc.maps)) {
				t.Errorf("splice %t, one pass %t, maps %v, value statement %q; want splice %t, maps %v",
					plan.splice, plan.onePass, maps, plan.value, tc.splice, tc.maps)
			}
		})
	}
}

// TestSpliceNames checks the marks' reading and writing on their own: ids by
// kind, a missing name as the empty string, and a page whose marks are cut.
func TestSpliceNames(t *testing.T) {
	page := "[{\"a\":\x01companies\x027\x01,\"b\":\x01users\x02\x01,\"c\":\x01companies\x028\x01}]"
	marks, err := readMarks(page)
	if err != nil {
		t.Fatal(err)
	}
	ids := marks.ids()
	if len(ids) != 1 || !slices.Equal(ids["companies"], pq.Int64Array{7, 8}) {
		t.Errorf("ids %v", ids)
	}
	out, err := marks.write(map[string]sql.NullString{"companies": {String: `{"7": "Se\u0000ven \"7\"", "9": "x"}`, Valid: true}})
	if want := `[{"a":"Se\u0000ven \"7\"","b":"","c":""}]`; err != nil || out != want {
		t.Errorf("spliced %s, %v; want %s", out, err, want)
	}
	out, err = marks.write(map[string]sql.NullString{"companies": {String: `{"7": null, "8": "Eight"}`, Valid: true}})
	if want := `[{"a":"","b":"","c":"Eight"}]`; err != nil || out != want {
		t.Errorf("spliced %s, %v; want %s", out, err, want)
	}
	for _, bad := range []string{``, `[]`, `{"7": "x"`, `{"7" "x"}`, `{"7": 7}`, `{"7": "x" "8": "y"}`, `{"7": "x\"}`, `{"\u0037": "x"}`} {
		if _, err := marks.write(map[string]sql.NullString{"companies": {String: bad, Valid: true}}); err == nil {
			t.Errorf("a map %q was read", bad)
		}
	}
	for _, cut := range []string{"[\x01companies\x027]", "[\x01companies7\x01]"} {
		if marks, err := readMarks(cut); err == nil {
			t.Errorf("%q read as %v", cut, marks)
		}
	}
}

// countingRunner records the statements a fast list sends.
type countingRunner struct {
	fastRunner
	sent []string
}

func (c *countingRunner) get(ctx context.Context, dest any, query string, args ...any) error {
	c.sent = append(c.sent, query)
	return c.fastRunner.get(ctx, dest, query, args...)
}

func (c *countingRunner) sel(ctx context.Context, dest any, query string, args ...any) error {
	c.sent = append(c.sent, query)
	return c.fastRunner.sel(ctx, dest, query, args...)
}

// newFastListAccount opens a pool on a database of the test's own (closed
// when the test ends) and creates an account there with an admin, Ann.
func newFastListAccount(t *testing.T, name string) (pool *sqlx.DB, acc, ann int64) {
	t.Helper()
	ctx := context.Background()
	pool, err := crmdb.Open(ctx, dbtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	if acc, err = CreateAccount(ctx, pool, AccountInput{Name: name, BaseCurrency: "EUR", TimeZone: "Europe/Riga"}); err != nil {
		t.Fatal(err)
	}
	if ann, err = CreateUser(ctx, pool, UserInput{AccountID: acc, Name: "Ann", Login: "ann@" + name + ".example", Role: RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	return pool, acc, ann
}

// runFastPage answers a list request of module as p in the fast form,
// counting the statements it sends.
func runFastPage(t *testing.T, server *Server, p *Principal, module int, params gen.CommonListPagingParams) (listResult, *countingRunner) {
	t.Helper()
	ctx := context.Background()
	r, err := server.newListQuery(ctx, p, listModules[module], params)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := r.fastCall()
	if err != nil {
		t.Fatal(err)
	}
	run := &countingRunner{fastRunner: server.stmts(ctx)}
	out, err := runFastList(ctx, run, p, plan, listMapsCall.kept)
	if err != nil {
		t.Fatal(err)
	}
	return out, run
}

// TestFastListStatementsOfAPage counts the statements of a full first page
// of tasks with their owners' and counterparties' names and the exact total:
// the page, then one call for its names and the maintained total (the bench's
// "first page of 50 tasks" on Citus).
func TestFastListStatementsOfAPage(t *testing.T) {
	ctx := context.Background()
	pool, acc, admin := newFastListAccount(t, "pages")
	kind, err := AddDirectoryValue(ctx, pool, DirectoryValueInput{AccountID: acc, Code: DirTaskKinds, Name: "Call"})
	if err != nil {
		t.Fatal(err)
	}
	var company int64
	if err := pool.Get(&company, `INSERT INTO companies (account_id, name, user_id, type_id) VALUES ($1, 'Co', $2, $3) RETURNING id`,
		acc, admin, addType(t, pool, acc)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(`INSERT INTO tasks (account_id, company_id, note, user_id, assigner_id, date_start, type_id)
		SELECT $1, $2, 'n', $3, $3, now(), $4 FROM generate_series(1, 60)`, acc, company, admin, kind); err != nil {
		t.Fatal(err)
	}
	p := &Principal{AccountID: acc, UserID: admin, Role: RoleAdmin, TimeZone: "Europe/Riga"}
	server := &Server{nodes: nodes{home: newDBNode(pool, nil)}, fastPath: true}
	columns, perPage := "id,note,status,date_start,user_name,company_name", 50
	out, run := runFastPage(t, server, p, ModuleTasks, gen.CommonListPagingParams{Columns: &columns, RecordsOnpage: &perPage})
	if len(run.sent) != 2 || !strings.HasPrefix(run.sent[0], `SELECT '{"id":'`) || run.sent[1] != listMapsCall.kept {
		t.Errorf("statements %q, want the page and the call of crm_list_maps", run.sent)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out.Value), &rows); err != nil {
		t.Fatal(err)
	}
	if out.Rows != 60 || len(rows) != 50 || rows[49]["company_name"] != "Co" || rows[49]["user_name"] != "Ann" {
		t.Errorf("total %d, page of %d, last %v", out.Rows, len(rows), rows[len(rows)-1])
	}
}

// TestRawNamesAreToJSON holds rawMembers to what the page's statement would
// write for a name: PostgreSQL's to_json of the text, for names with every
// character JSON escapes and some it does not.
func TestRawNamesAreToJSON(t *testing.T) {
	db := dbtest.New(t)
	var ctl []string
	for c := 1; c < 0x20; c++ {
		ctl = append(ctl, string(rune(c)))
	}
	names := []string{"plain", `quote " and backslash \ and slash /`, strings.Join(ctl, ""), "tab\tnew\nline", "ūnicode ✓ \u2028", ""}
	var row struct {
		Map    string         `db:"map"`
		AsJSON pq.StringArray `db:"as_json"`
	}
	if err := db.Get(&row, `SELECT jsonb_object_agg(n, name)::text AS map, array_agg(to_json(name)::text ORDER BY n) AS as_json
		FROM unnest($1::text[]) WITH ORDINALITY AS x (name, n)`, pq.Array(names)); err != nil {
		t.Fatal(err)
	}
	members, err := rawMembers(row.Map)
	if err != nil {
		t.Fatalf("%s: %v", row.Map, err)
	}
	for i, want := range row.AsJSON {
		if got := members[strconv.Itoa(i+1)]; got != want {
			t.Errorf("name %q: %s, want %s", names[i], got, want)
		}
	}
}

// TestFastListByName checks the counterparties' name filter of the fast list:
// one call of crm_list_maps finds the ids (case-insensitively, LIKE's
// wildcards in the term matching themselves, the owners the caller sees) with
// the maps read whole, and the page follows: two statements. The previous
// release's crm_list_maps of 13 arguments still answers.
func TestFastListByName(t *testing.T) {
	ctx := context.Background()
	pool, acc, ann := newFastListAccount(t, "names")
	bob, err := CreateUser(ctx, pool, UserInput{AccountID: acc, Name: "Bob", Login: "bob@names.example", Role: RoleMember})
	if err != nil {
		t.Fatal(err)
	}
	typ := addType(t, pool, acc)
	ids := map[string]int64{}
	for _, c := range []struct {
		name  string
		owner int64
	}{{"Zephyr One", ann}, {"zephyr two", bob}, {"Other", ann}, {"100% ZEPHYR", ann}, {"1000 Zephyrs", bob}} {
		var id int64
		if err := pool.Get(&id, `INSERT INTO companies (account_id, name, user_id, type_id) VALUES ($1, $2, $3, $4) RETURNING id`,
			acc, c.name, c.owner, typ); err != nil {
			t.Fatal(err)
		}
		ids[c.name] = id
	}
	server := &Server{nodes: nodes{home: newDBNode(pool, nil)}, fastPath: true}
	columns := "id,name,user_name"
	for _, tc := range []struct {
		who  *Principal
		term string
		want []string // in the order of the page: by id, descending
	}{
		{&Principal{AccountID: acc, UserID: ann, Role: RoleAdmin}, "ZePhYr", []string{"1000 Zephyrs", "100% ZEPHYR", "zephyr two", "Zephyr One"}},
		{&Principal{AccountID: acc, UserID: bob, Role: RoleMember}, "zephyr", []string{"1000 Zephyrs", "zephyr two"}},
		{&Principal{AccountID: acc, UserID: ann, Role: RoleAdmin}, "0% z", []string{"100% ZEPHYR"}},
		{&Principal{AccountID: acc, UserID: ann, Role: RoleAdmin}, "0_ z", nil},
		{&Principal{AccountID: acc, UserID: ann, Role: RoleAdmin}, "nothing", nil},
	} {
		name := tc.term
		out, run := runFastPage(t, server, tc.who, ModuleCompanies, gen.CommonListPagingParams{Columns: &columns, Name: &name})
		wantSent := 2
		if len(tc.want) == 0 {
			wantSent = 1
		}
		if len(run.sent) != wantSent || run.sent[0] != listMapsCall.kept || wantSent == 2 && !strings.HasPrefix(run.sent[1], `SELECT '{"id":'`) {
			t.Errorf("%q as %s: statements %q, want the call of crm_list_maps and the page", tc.term, tc.who.Role, run.sent)
		}
		var rows []struct {
			ID       int64  `json:"id"`
			Name     string `json:"name"`
			UserName string `json:"user_name"`
		}
		if err := json.Unmarshal([]byte(out.Value), &rows); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, row := range rows {
			got = append(got, row.Name)
			owner := "Ann"
			if row.ID == ids["zephyr two"] || row.ID == ids["1000 Zephyrs"] {
				owner = "Bob"
			}
			if row.ID != ids[row.Name] || row.UserName != owner {
				t.Errorf("%q: row %+v, want id %d and owner %s", tc.term, row, ids[row.Name], owner)
			}
		}
		if !slices.Equal(got, tc.want) || out.Rows != len(tc.want) {
			t.Errorf("%q as %s: %d in all, page %q; want %q", tc.term, tc.who.Role, out.Rows, got, tc.want)
		}
	}

	// The previous release's call, 13 arguments: the same as the new one
	// without a name.
	var old, cur struct {
		IDs   idList         `db:"o_ids"`
		Users sql.NullString `db:"o_users"`
	}
	if err := pool.Get(&old, `SELECT o_ids, o_users FROM crm_list_maps($1, NULL, '{users}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'nobody@names.example', NULL)`, acc); err != nil {
		t.Fatal(err)
	}
	if err := pool.Get(&cur, `SELECT o_ids, o_users FROM crm_list_maps($1, NULL, '{users}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'nobody@names.example', NULL, NULL)`, acc); err != nil {
		t.Fatal(err)
	}
	if old.IDs != nil || !old.Users.Valid || old.Users != cur.Users {
		t.Errorf("crm_list_maps of 13 arguments: %+v, of 14: %+v", old, cur)
	}
}
