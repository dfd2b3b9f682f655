package impl

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lib/pq"
)

// The universal list as statements of one table each (runFastList), so that
// on Citus they run on the account's node with their plans kept, as every
// hot request does (docs/scale-out.md). The server sends them one by one as
// prepared statements of that node: one call of a PL/pgSQL function that ran
// them (crm_list) cost three times as much there, in the function's own
// dynamic SQL. What the general statements of list.go read through
// joins, these read from maps of names that runFastList reads for the page's
// records alone: a column of a joined user, directory value, counterparty,
// deal or money account becomes a lookup in the map of its kind, by the id
// its join declares, or, where the column is the name alone, a mark in the
// page's objects that runFastList replaces with the name once it has read the
// maps of the page's records (pageMarks): the page is then read once. A
// filter on another table (a counterparty's e-mail, phone or name) becomes a
// prefilter: the ids of the records it keeps, read first by crm_list_maps
// with the maps read whole. What this form cannot express (a join the module needs for every row,
// a sort by the name of a counterparty, deal or money account, two
// prefilters, the mail module's mailboxes) the general statements serve.

// fastModules are the modules the fast list serves.
var fastModules = map[int]bool{ModuleCompanies: true, ModuleTasks: true, ModuleDocuments: true,
	ModuleFinance: true, ModuleDeals: true, ModuleGoods: true}

// The parameters every statement of the fast list has before the request's
// own, whose values runFastList gives (fastOwnTypes are their types).
const (
	fastAccount      = "$1"
	fastVisible      = "$2"
	fastPage         = "$3"
	fastPrefiltered  = "$9"
	fastOwnParams    = 12
	fastMapUsers     = "$4"
	fastMapDirs      = "$5"
	fastMapCompanies = "$6"
	fastMapDeals     = "$7"
	fastMapMoney     = "$8"
	fastCompanyRows  = "$10"
	fastLowest       = "$11" // the least and the greatest of the prefilter's ids
	fastHighest      = "$12"
)

// mapOf names the map of names of each table a module joins, and the kind
// runFastList knows it by; a join of another table is not served here.
var mapOf = map[string]struct{ param, kind string }{
	"users":            {fastMapUsers, "users"},
	"directory_values": {fastMapDirs, "dirs"},
	"companies":        {fastMapCompanies, "companies"},
	"deals":            {fastMapDeals, "deals"},
	"money_accounts":   {fastMapMoney, "money_accounts"},
}

// newFastSQL starts a statement of the fast list for p: {acc} and
// {visibleUsers} are its own parameters, the request's values follow them.
func newFastSQL(p *Principal) *sqlText {
	q := sqlFor(p)
	q.args = make([]any, fastOwnParams)
	q.names = make([]string, fastOwnParams)
	q.set("acc", fastAccount)
	q.set("visibleUsers", fastVisible+"::bigint[]")
	return q
}

// fastList is a request of the list in the fast form, being built.
type fastList struct {
	byName bool // the prefilter is the counterparties' name, which keeps the live ones the caller sees
	// The prefilter that crm_list_maps runs, with the maps read whole,
	// before the page: "email", "phone" or "name", and its value.
	byCall, callValue string
}

// has reports whether the list has a prefilter.
func (fl *fastList) has() bool { return fl.byCall != "" }

// prefilterCompanies makes the e-mail, phone and name filters of the
// counterparties prefilters of the fast list.
func (q *listQuery) prefilterCompanies(name, v string) {
	switch name {
	case "email":
		// Of the counterparty or of its contact persons: both are rows of
		// emails (db/functions/list_maps.sql).
		q.fast.byCall, q.fast.callValue = "email", v
	case "phone":
		// The ending's digits, reversed, as the index phones_digits_suffix
		// holds them (db/functions/list_maps.sql).
		q.fast.byCall, q.fast.callValue = "phone", reverseString(onlyDigits(v))
	case "name":
		// company_names (db/migrations/0066_company_names.sql): the live
		// counterparties' lower-cased names and owners, read by the call
		// with the maps read whole, which builds the pattern once.
		q.fast.byCall, q.fast.callValue = "name", escapeLike(v)
		q.fast.byName = true
	}
}

// fastEligible reports whether the fast list serves a request of module m with
// these filters and sort: a module of fastModules, at most one filter on
// another table, and a sort by a column of the module's table, a user or a
// directory value.
func fastEligible(m *listModule, filters []listFilterValue, sortColumn *string) bool {
	if !fastModules[m.code] || m.inner != "" {
		return false
	}
	prefilters := 0
	for _, f := range filters {
		switch {
		case f.name == "user_filter_ids":
			return false // the ready filters' own filters are not known yet
		case m.code == ModuleCompanies && (f.name == "email" || f.name == "phone" || f.name == "name"):
			prefilters++
		}
	}
	if prefilters > 1 {
		return false
	}
	if sortColumn != nil && *sortColumn != "" {
		c, ok := m.columns[*sortColumn]
		if !ok {
			return true // an ADD_ column, or an unknown one that sortBy refuses
		}
		for _, j := range c.joins {
			if t := m.join(j).table; t != "users" && t != "directory_values" {
				return false
			}
		}
	}
	return true
}

// join returns the module's join of that name.
func (m *listModule) join(name string) listJoin {
	for _, j := range m.joins {
		if j.name == name {
			return j
		}
	}
	panic("impl: module " + strconv.Itoa(m.code) + " has no join " + name)
}

// aliasField finds alias.field in a column's expression.
var aliasField = regexp.MustCompile(`\b([a-z]+)\.([a-z_]+)\b`)

// fastExpr rewrites an expression of the general statements into the fast
// form: a field of a join becomes a lookup in its map by the join's id
// (itself rewritten when it is a field of another join, such as co.type_id).
// A map of names gives the name of a user, directory value, counterparty or
// deal; a counterparty's other fields come from the map of its rows, a money
// account's from an object. used collects the maps the lookups read. Each
// expression of a module is rewritten once (fastExprs).
func (m *listModule) fastExpr(expr string, used map[string]bool) string {
	key := strconv.Itoa(m.code) + ":" + expr
	r, ok := fastExprs.get(key)
	if !ok {
		reads := map[string]bool{}
		r = fastRewrite{expr: m.rewriteFast(expr, reads), reads: keys(reads)}
		fastExprs.put(key, r)
	}
	for _, k := range r.reads {
		used[k] = true
	}
	return r.expr
}

// fastRewrite is an expression in the fast form and the maps it reads.
type fastRewrite struct {
	expr  string
	reads []string
}

var fastExprs = newMemo[fastRewrite](2000)

// rewriteFast does fastExpr's work, once per expression.
func (m *listModule) rewriteFast(expr string, used map[string]bool) string {
	return aliasField.ReplaceAllStringFunc(expr, func(s string) string {
		parts := aliasField.FindStringSubmatch(s)
		alias, field := parts[1], parts[2]
		if alias == m.alias {
			return s
		}
		for _, j := range m.joins {
			if j.name != alias {
				continue
			}
			id := "(" + m.rewriteFast(j.idCol, used) + ")::text"
			mp := mapOf[j.table]
			switch {
			case j.table == "money_accounts":
				used[mp.kind] = true
				return "(" + mp.param + " -> " + id + " ->> '" + field + "')"
			case j.table == "companies" && field != "name":
				used["company_rows"] = true
				return "(" + fastCompanyRows + " -> " + id + " ->> '" + field + "')"
			case field != "name":
				panic("impl: list join " + alias + " of module " + strconv.Itoa(m.code) + " shows " + field)
			}
			used[mp.kind] = true
			return "(" + mp.param + " ->> " + id + ")"
		}
		return s // a cast or a function such as x.y never names a join
	})
}

// nameOnly is a name column of a join (nameCol).
var nameOnly = regexp.MustCompile(`^coalesce\(([a-z]+)\.name, ''\)$`)

// ownColumn is a column of a module's own table as a join's id.
var ownColumn = regexp.MustCompile(`^[a-z]+\.[a-z_]+$`)

// nameMark gives, for a column that is the name of a user, directory value,
// counterparty or deal joined by a column of the module's own table, and
// whose map is not read whole, the kind of its map and a mark that stands
// for the name in the page's objects: the kind and the id between the bytes
// 0x01 and 0x02, 0x01 (pageMarks). No JSON text that to_json writes holds
// those bytes: it writes a control character of a string as \u0001.
func (m *listModule) nameMark(expr string, whole []string) (kind, mark string, ok bool) {
	key := strconv.Itoa(m.code) + ":" + strings.Join(whole, ",") + ":" + expr
	r, seen := nameMarks.get(key)
	if !seen {
		r.kind, r.mark, r.ok = m.markOf(expr, whole)
		nameMarks.put(key, r)
	}
	return r.kind, r.mark, r.ok
}

// nameMarks keeps what nameMark found for each column of a module.
var nameMarks = newMemo[struct {
	kind, mark string
	ok         bool
}](2000)

// markOf does nameMark's work, once per column and maps read whole.
func (m *listModule) markOf(expr string, whole []string) (kind, mark string, ok bool) {
	g := nameOnly.FindStringSubmatch(expr)
	if g == nil {
		return "", "", false
	}
	for _, j := range m.joins {
		if j.name != g[1] {
			continue
		}
		kind = mapOf[j.table].kind
		if kind == "money_accounts" || slices.Contains(whole, kind) || !ownColumn.MatchString(j.idCol) ||
			!strings.HasPrefix(j.idCol, m.alias+".") {
			return "", "", false
		}
		return kind, "chr(1) || '" + kind + "' || chr(2) || coalesce((" + j.idCol + ")::text, '') || chr(1)", true
	}
	return "", "", false
}

// fastPlan is a request of the list as the statements runFastList runs.
type fastPlan struct {
	rows, value, total         string   // "" where not needed
	byCall, callValue          string   // fastList's
	types                      []string // the SQL types of the request's values ($13 on)
	args                       []*string
	maps, sortMaps             []string
	byPrefilter, desc, onePass bool
	splice                     bool // the page's objects hold name marks (nameMark) for maps
	limit, offset              int64
	countModule, countKind     *int16
}

// fastCall turns r, whose query was built in the fast form (newFastSQL), into
// the statements that answer it.
func (r *listRequest) fastCall() (*fastPlan, error) {
	q, fl, columns, sortExpr, dir := r.q, r.q.fast, r.columns, r.sortExpr, r.dir
	m, p := q.m, q.p
	// Filtered, for the total: other than by the prefilter alone.
	filtered := len(r.filters) > 1 || len(r.filters) == 1 && !fl.has()
	used := map[string]bool{}
	for j := range q.colJoins {
		used[j] = true
	}
	for j := range q.sortJoins {
		used[j] = true
	}
	// The maps the page needs, and the ids each row gives them.
	ids := map[string][]string{}
	maps := map[string]bool{}
	for _, j := range m.joins {
		if !used[j.name] {
			continue
		}
		kind := mapOf[j.table].kind
		if strings.Contains(j.idCol, ".") && !strings.HasPrefix(j.idCol, m.alias+".") {
			// A directory value of the counterparty: its id comes with the map of counterparties.
			maps["company_dirs"] = true
			continue
		}
		maps[kind] = true
		ids[kind] = append(ids[kind], j.idCol)
	}
	sortMaps := []string{}
	for j := range q.sortJoins {
		switch m.join(j).table {
		case "users":
			sortMaps = append(sortMaps, "users")
		case "directory_values":
			sortMaps = append(sortMaps, "dirs")
		}
	}
	array := func(kind string) string {
		if len(ids[kind]) == 0 {
			return "'{}'::bigint[]"
		}
		return "ARRAY[" + strings.Join(ids[kind], ", ") + "]::bigint[]"
	}
	refs := m.alias + ".id, " + array("users") + " AS users, " + array("dirs") + " AS dirs, " +
		array("companies") + " AS companies, " + array("deals") + " AS deals, " + array("money_accounts") + " AS money_accounts"

	byPrefilter := fl.byName && sortExpr == "" && !filtered
	// One pass: every name comes from a small table, whose map runFastList
	// reads whole before the page; the page's statement then writes the rows.
	onePass := true
	for kind := range maps {
		if kind != "users" && kind != "dirs" {
			onePass = false
		}
	}
	where := strings.Join(q.where, " AND ")
	if fl.has() {
		// The prefilter's ids as a range too: a plan made for any ids (a
		// generic plan, which Citus keeps on the shard) takes a range of two
		// values for a few rows, which it reads by the primary key; with the
		// array alone it walked the account's rows in the order of ids (a
		// counterparty by e-mail on a shard of 263: 9 buffers, then 3).
		where += " AND " + m.alias + ".id = ANY (" + fastPrefiltered + "::bigint[]) AND " +
			m.alias + ".id >= " + fastLowest + "::bigint AND " + m.alias + ".id <= " + fastHighest + "::bigint"
	}
	// A column is `expr AS "name"` (listQuery.columns). The object of a row
	// is written as row_to_json writes one, members in the order asked,
	// without blanks: each member's value is its JSON text.
	lookups := map[string]bool{}
	members := make([]string, len(columns))
	// The same object with a mark (nameMark) where a name column of a map
	// read for the page's records alone will go: written after the page
	// (pageMarks), it spares the statement that would write the page
	// again with the maps.
	spliceLookups, spliced := map[string]bool{}, map[string]bool{}
	marked := make([]string, len(columns))
	for i, c := range columns {
		at := strings.LastIndex(c, ` AS "`)
		sep := ","
		if i == 0 {
			sep = "{"
		}
		member := "'" + sep + `"` + c[at+5:len(c)-1] + `":' || `
		members[i] = member + "coalesce(to_json(" + m.fastExpr(c[:at], lookups) + ")::text, 'null')"
		if kind, mark, ok := m.nameMark(c[:at], sortMaps); ok {
			marked[i], spliced[kind] = member+mark, true
		} else {
			marked[i] = member + "coalesce(to_json(" + m.fastExpr(c[:at], spliceLookups) + ")::text, 'null')"
		}
	}
	object := strings.Join(members, " || ") + " || '}'"
	order := m.fastExpr(q.order(sortExpr, dir), lookups)
	if lookups["company_rows"] {
		onePass = false
		maps["company_rows"] = true
	}
	// Spliced: what is left in the statement reads only the maps read whole.
	// A filtered page, which mostly holds a few records or none, splices the
	// names it has rather than read the small tables whole before it, unless
	// the call of its prefilter reads them.
	splice := (!onePass || filtered && fl.byCall == "") && len(spliced) > 0
	for kind := range spliceLookups {
		if !slices.Contains(sortMaps, kind) {
			splice = false
		}
	}
	if splice {
		object, onePass, maps = strings.Join(marked, " || ")+" || '}'", true, spliced
	}
	var rows string
	switch {
	case onePass:
		rows = "SELECT " + object + " AS j FROM " + m.from + " WHERE " + where +
			" ORDER BY " + order + " LIMIT {limit} OFFSET {offset}"
		if byPrefilter {
			// The page is the prefilter's ids cut already, in their order.
			rows = "SELECT " + object + " AS j FROM " + m.from + " WHERE " + m.alias + ".account_id = {acc} AND " +
				m.alias + ".id = ANY (" + fastPage + "::bigint[]) ORDER BY array_position(" + fastPage + "::bigint[], " + m.alias + ".id)"
		}
		if !splice {
			for kind := range maps {
				if !slices.Contains(sortMaps, kind) {
					sortMaps = append(sortMaps, kind)
				}
			}
			maps = map[string]bool{}
		}
	case byPrefilter:
		rows = "SELECT " + refs + " FROM " + m.from + " WHERE " + m.alias + ".account_id = {acc} AND " +
			m.alias + ".id = ANY (" + fastPage + "::bigint[])"
	default:
		rows = "SELECT " + refs + " FROM " + m.from + " WHERE " + where +
			" ORDER BY " + order + " LIMIT {limit} OFFSET {offset}"
	}
	value := "SELECT '[' || string_agg(" + object + ", ',' ORDER BY array_position(" +
		fastPage + "::bigint[], " + m.alias + ".id)) || ']' FROM " + m.from + " WHERE " + m.alias + ".account_id = {acc} AND " +
		m.alias + ".id = ANY (" + fastPage + "::bigint[])"
	if onePass {
		value = ""
	}
	total := "SELECT count(*) FROM " + m.from + " WHERE " + where
	var countModule, countKind *int16
	if !filtered && !fl.has() {
		if mod, kind, ok := fastCount(m, p); ok {
			countModule, countKind, total = &mod, kind, ""
		}
	}
	rows, value, total = q.expand(rows), q.expand(value), q.expand(total)
	types, args, err := fastArgs(q.args[fastOwnParams:])
	if err != nil {
		return nil, err
	}
	return &fastPlan{byCall: fl.byCall, callValue: fl.callValue, rows: rows, value: value, total: total, types: types, args: args,
		maps: keys(maps), sortMaps: sortMaps, byPrefilter: byPrefilter, desc: dir == "DESC",
		limit: int64(r.perPage), offset: int64(r.page-1) * int64(r.perPage), onePass: onePass, splice: splice,
		countModule: countModule, countKind: countKind}, nil
}

// fastCount tells runFastList where the total of an unfiltered list of m is kept
// in list_counts (the module, and the kind, nil for any), with the owners p
// sees; ok is false where the rows are counted (as the general statements'
// count of m does).
func fastCount(m *listModule, p *Principal) (module int16, kind *int16, ok bool) {
	zero := int16(0)
	switch m.code {
	case ModuleCompanies, ModuleDocuments, ModuleFinance, ModuleDeals, ModuleJournal:
		return int16(m.code), &zero, true
	case ModuleTasks:
		switch {
		case p.Role == RoleAdmin:
			return ModuleTasks, &zero, true
		case !p.seesDepartment():
			// kind 0: tasks the member is assigned; kind 1: those they assigned to someone else.
			return ModuleTasks, nil, true
		}
	}
	return 0, nil, false
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// fastArgs gives the request's values as text, and their SQL types.
func fastArgs(values []any) ([]string, []*string, error) {
	types := make([]string, len(values))
	texts := make([]*string, len(values))
	for i, v := range values {
		typ, text, err := typedText(v)
		if err != nil {
			return nil, nil, fmt.Errorf("list parameter %d: %w", i+fastOwnParams+1, err)
		}
		types[i], texts[i] = typ, text
	}
	return types, texts, nil
}

// typedText is the SQL type and the text of a value of the list's statements
// (nil text: NULL).
func typedText(v any) (string, *string, error) {
	str := func(s string) *string { return &s }
	switch x := v.(type) {
	case int:
		return "bigint", str(strconv.Itoa(x)), nil
	case int64:
		return "bigint", str(strconv.FormatInt(x, 10)), nil
	case string:
		return "text", str(x), nil
	case bool:
		return "boolean", str(strconv.FormatBool(x)), nil
	case pq.StringArray, *pq.StringArray, pq.Int64Array, *pq.Int64Array:
		typ := "text[]"
		switch x.(type) {
		case pq.Int64Array, *pq.Int64Array:
			typ = "bigint[]"
		}
		dv, err := x.(driver.Valuer).Value()
		if err != nil {
			return "", nil, err
		}
		if dv == nil {
			return typ, nil, nil
		}
		return typ, str(dv.(string)), nil
	}
	if dv, ok := v.(driver.Valuer); ok {
		// The nullable values of sqlFor ({dept}): sql.NullInt64.
		val, err := dv.Value()
		if err != nil {
			return "", nil, err
		}
		switch val := val.(type) {
		case nil:
			return "bigint", nil, nil
		case int64:
			return "bigint", str(strconv.FormatInt(val, 10)), nil
		}
	}
	return "", nil, fmt.Errorf("a value of type %T", v)
}

// fastRunner runs the statements of a fast list: the prepared statements of
// the account's node (Server.stmts), or in a test a session that explains
// each one.
type fastRunner interface {
	get(ctx context.Context, dest any, query string, args ...any) error
	sel(ctx context.Context, dest any, query string, args ...any) error
}

// fastOwnTypes are the SQL types of the parameters every statement of a fast
// list has before the request's own ($1 to $12).
var fastOwnTypes = [fastOwnParams]string{"bigint", "bigint[]", "bigint[]", "jsonb", "jsonb", "jsonb", "jsonb", "jsonb", "bigint[]", "jsonb",
	"bigint", "bigint"}

// fastOwn are the values of a fast list's own parameters, in their order.
type fastOwn [fastOwnParams]any

// fastParam finds a parameter reference of a statement.
var fastParam = regexp.MustCompile(`\$(\d+)`)

// bind numbers the parameters that stmt uses from 1 in their order, each cast
// to its type (a statement prepared by the driver has no declared types), and
// returns their values. The numbering of a statement is worked out once
// (boundStmts).
func (f *fastPlan) bind(stmt string, own *fastOwn) (string, []any) {
	b := boundOf(stmt, f.types)
	args := make([]any, len(b.refs))
	for i, n := range b.refs {
		switch {
		case n <= fastOwnParams:
			args[i] = own[n-1]
		case f.args[n-fastOwnParams-1] != nil:
			args[i] = *f.args[n-fastOwnParams-1]
		}
	}
	return b.text, args
}

// boundStmt is a statement of the fast list as bind sends it: its text, and
// the number in the fast list's own numbering of each of its parameters.
type boundStmt struct {
	text string
	refs []int
}

// boundStmts keeps the boundStmt of each statement and types seen: a
// request's statements differ by their columns, filters and sort alone.
var boundStmts = newMemo[boundStmt](2000)

// boundOf numbers the parameters of stmt for bind.
func boundOf(stmt string, types []string) boundStmt {
	key := stmt + "\x00" + strings.Join(types, ",")
	if b, ok := boundStmts.get(key); ok {
		return b
	}
	var b boundStmt
	index := map[int]int{}
	b.text = fastParam.ReplaceAllStringFunc(stmt, func(ref string) string {
		n, _ := strconv.Atoi(ref[1:])
		k, ok := index[n]
		if !ok {
			if n < 1 || n > fastOwnParams+len(types) {
				panic("impl: list statement refers to " + ref)
			}
			b.refs = append(b.refs, n)
			k = len(b.refs)
			index[n] = k
		}
		typ := ""
		if n <= fastOwnParams {
			typ = fastOwnTypes[n-1]
		} else {
			typ = types[n-fastOwnParams-1]
		}
		return "$" + strconv.Itoa(k) + "::" + typ
	})
	boundStmts.put(key, b)
	return b
}

// memo is a bounded map of what the fast list works out once for a text
// (a statement, an expression): it starts over when it is full, since the
// texts of requests are few but not bounded.
type memo[V any] struct {
	mu    sync.Mutex
	max   int
	byKey map[string]V
}

func newMemo[V any](max int) *memo[V] { return &memo[V]{max: max, byKey: map[string]V{}} }

func (c *memo[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.byKey[key]
	return v, ok
}

func (c *memo[V]) put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byKey) >= c.max {
		clear(c.byKey)
	}
	c.byKey[key] = v
}

// idList scans an array of ids, leaving out its NULLs (a record without the
// user, counterparty or deal a column names).
type idList []int64

func (l *idList) Scan(src any) error {
	var a []sql.NullInt64
	if err := pq.Array(&a).Scan(src); err != nil {
		return err
	}
	for _, v := range a {
		if v.Valid {
			*l = append(*l, v.Int64)
		}
	}
	return nil
}

// jsonArg is a map of names as a parameter: NULL when it was not read.
func jsonArg(m sql.NullString) any {
	if !m.Valid {
		return nil
	}
	return m.String
}

// listMaps is what crm_list_maps returns (db/functions/list_maps.sql).
type listMaps struct {
	Users         sql.NullString `db:"o_users"`
	Dirs          sql.NullString `db:"o_dirs"`
	Companies     sql.NullString `db:"o_companies"`
	CompanyRows   sql.NullString `db:"o_company_rows"`
	Deals         sql.NullString `db:"o_deals"`
	MoneyAccounts sql.NullString `db:"o_money_accounts"`
	Total         sql.NullInt64  `db:"o_total"`
	IDs           idList         `db:"o_ids"`
}

// listMapsCall is the call of crm_list_maps (callStmt).
var listMapsCall = newCallStmt(`SELECT * FROM crm_list_maps($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`)

// runFastList answers the list request f of p: each statement reads one
// table with the account first, so that on Citus each is a fast-path
// statement whose plan the account's node keeps (docs/scale-out.md), and all
// of them go to that node. The page's statements, which depend on the
// request, are sent one by one; the maps of names the page shows and its
// maintained total come from one call of crm_list_maps, before the page where
// they are read whole for the account (a sort by a name, a page written in one
// pass; with the prefilter of an e-mail, a phone or a name), else after it for the
// page's records alone. A full first page of tasks with their counterparties
// is two statements; a counterparty found by e-mail, two.
//
// mapsCall is the call of crm_list_maps in the form of the request's node
// (Server.call).
func runFastList(ctx context.Context, run fastRunner, p *Principal, f *fastPlan, mapsCall string) (listResult, error) {
	var own fastOwn
	own[0] = p.AccountID
	// impl/access.go, seesOwner: an admin sees every user's records, a head
	// those of the users of their department and their own, anyone else their
	// own. NULL: every user's.
	var visible pq.Int64Array
	switch {
	case p.Role == RoleAdmin:
	case p.Role == RoleHead && p.DepartmentID.Valid:
		var ids idList
		if err := run.get(ctx, &ids, `SELECT array_agg(id) FROM users WHERE account_id = $1 AND (id = $2 OR department_id = $3)`,
			p.AccountID, p.UserID, p.DepartmentID.Int64); err != nil {
			return listResult{}, fmt.Errorf("the users a head sees: %w", err)
		}
		visible = pq.Int64Array(ids)
	default:
		visible = pq.Int64Array{p.UserID}
	}
	if visible != nil {
		own[1] = visible
	}
	page := pq.Int64Array{}
	own[2] = page
	var email, phone, name any // the prefilter of the call of crm_list_maps, nil for none
	maps := func(whole, kinds []string, users, dirs, companies, deals, money pq.Int64Array, count bool) (listMaps, error) {
		var out listMaps
		module, kind := f.countModule, f.countKind
		if !count {
			module, kind = nil, nil
		}
		err := run.get(ctx, &out, mapsCall, p.AccountID, own[1], pq.Array(whole), pq.Array(kinds),
			users, dirs, companies, deals, money, module, kind, email, phone, name)
		return out, err
	}

	var prefiltered idList
	wholeRead := false // the maps read whole are read
	if f.byCall != "" {
		// The prefilter and the maps read whole in one call.
		switch f.byCall {
		case "email":
			email = f.callValue
		case "phone":
			phone = f.callValue
		default:
			name = f.callValue
		}
		m, err := maps(f.sortMaps, nil, nil, nil, nil, nil, nil, false)
		if err != nil {
			return listResult{}, fmt.Errorf("prefilter: %w", err)
		}
		email, phone, name = nil, nil, nil
		prefiltered, wholeRead = m.IDs, true
		own[3], own[4] = jsonArg(m.Users), jsonArg(m.Dirs)
		if len(prefiltered) == 0 {
			return listResult{Rows: 0, Value: "[]"}, nil
		}
		own[8] = pq.Int64Array(prefiltered)
		own[10], own[11] = slices.Min(prefiltered), slices.Max(prefiltered)
	}
	if f.byPrefilter {
		// The page is cut from the ids themselves.
		ids := slices.Clone([]int64(prefiltered))
		slices.Sort(ids)
		if f.desc {
			slices.Reverse(ids)
		}
		from, to := min(f.offset, int64(len(ids))), min(f.offset+f.limit, int64(len(ids)))
		page = ids[from:to]
		own[2] = page
	}

	// The maps read whole, and the maintained total of a page in one pass,
	// before the page.
	var total sql.NullInt64
	countFirst := f.onePass && !f.splice && !f.byPrefilter && f.countModule != nil
	switch {
	case wholeRead:
	case countFirst:
		m, err := maps(f.sortMaps, nil, nil, nil, nil, nil, nil, true)
		if err != nil {
			return listResult{}, fmt.Errorf("names and total of the list: %w", err)
		}
		own[3], own[4], total = jsonArg(m.Users), jsonArg(m.Dirs), m.Total
	default:
		// A map alone costs less as a statement than as a call.
		for _, kind := range f.sortMaps {
			into := 3
			if kind == "dirs" {
				into = 4
			}
			var names sql.NullString
			if err := run.get(ctx, &names, `SELECT jsonb_object_agg(id, name) FROM `+nameTable[kind]+` WHERE account_id = $1`, p.AccountID); err != nil {
				return listResult{}, fmt.Errorf("names of %s: %w", nameTable[kind], err)
			}
			own[into] = jsonArg(names)
		}
	}

	var value string
	read := 0 // the records the page statement found
	if f.onePass {
		var objects []string
		if !f.byPrefilter || len(page) > 0 {
			stmt, args := f.bind(f.rows, &own)
			if err := run.sel(ctx, &objects, stmt, args...); err != nil {
				return listResult{}, fmt.Errorf("page: %w", err)
			}
		}
		read = len(objects)
		value = "[" + strings.Join(objects, ",") + "]"
		if f.splice {
			// The names the marks stand for, and the maintained total
			// unless the page tells it, in one call.
			marks, err := readMarks(value)
			if err != nil {
				return listResult{}, fmt.Errorf("names of the page: %w", err)
			}
			ids := marks.ids()
			count := f.countModule != nil && !f.byPrefilter && !shortPage(read, f)
			names := map[string]sql.NullString{}
			switch kind, alone := oneNameMap(ids); {
			case alone != "" && !count:
				// A map alone costs less as a statement than as a call.
				var m sql.NullString
				if err := run.get(ctx, &m, alone, p.AccountID, ids[kind]); err != nil {
					return listResult{}, fmt.Errorf("names of the page: %w", err)
				}
				names[kind] = m
			case len(ids) > 0 || count:
				m, err := maps(nil, f.maps, ids["users"], ids["dirs"], ids["companies"], ids["deals"], nil, count)
				if err != nil {
					return listResult{}, fmt.Errorf("names and total of the page: %w", err)
				}
				names = map[string]sql.NullString{"users": m.Users, "dirs": m.Dirs, "companies": m.Companies, "deals": m.Deals}
				total = m.Total
			}
			if value, err = marks.write(names); err != nil {
				return listResult{}, fmt.Errorf("names of the page: %w", err)
			}
		}
	} else {
		var rows []struct {
			ID            sql.NullInt64 `db:"id"`
			Users         idList        `db:"users"`
			Dirs          idList        `db:"dirs"`
			Companies     idList        `db:"companies"`
			Deals         idList        `db:"deals"`
			MoneyAccounts idList        `db:"money_accounts"`
		}
		stmt, args := f.bind(f.rows, &own)
		if err := run.sel(ctx, &rows, stmt, args...); err != nil {
			return listResult{}, fmt.Errorf("page: %w", err)
		}
		read = len(rows)
		var userIDs, dirIDs, companyIDs, dealIDs, moneyIDs pq.Int64Array
		for _, r := range rows {
			if !f.byPrefilter {
				page = append(page, r.ID.Int64)
			}
			userIDs = append(userIDs, r.Users...)
			dirIDs = append(dirIDs, r.Dirs...)
			companyIDs = append(companyIDs, r.Companies...)
			dealIDs = append(dealIDs, r.Deals...)
			moneyIDs = append(moneyIDs, r.MoneyAccounts...)
		}
		own[2] = page
		// The maps of the page's records (those read whole are not read
		// again), and the maintained total unless the page tells it.
		var kinds []string
		for _, k := range f.maps {
			if !slices.Contains(f.sortMaps, k) {
				kinds = append(kinds, k)
			}
		}
		count := f.countModule != nil && !f.byPrefilter && !shortPage(read, f)
		if len(kinds) > 0 || count {
			m, err := maps(nil, kinds, userIDs, dirIDs, companyIDs, dealIDs, moneyIDs, count)
			if err != nil {
				return listResult{}, fmt.Errorf("names and total of the page: %w", err)
			}
			if !slices.Contains(f.sortMaps, "users") {
				own[3] = jsonArg(m.Users)
			}
			if !slices.Contains(f.sortMaps, "dirs") {
				own[4] = jsonArg(m.Dirs)
			}
			own[5], own[6], own[7], own[9] = jsonArg(m.Companies), jsonArg(m.Deals), jsonArg(m.MoneyAccounts), jsonArg(m.CompanyRows)
			total = m.Total
		}
		value = "[]"
		if len(page) > 0 {
			var v sql.NullString
			stmt, args := f.bind(f.value, &own)
			if err := run.get(ctx, &v, stmt, args...); err != nil {
				return listResult{}, fmt.Errorf("page: %w", err)
			}
			if v.Valid {
				value = v.String
			}
		}
	}

	out := listResult{Value: value}
	switch {
	case f.byPrefilter:
		out.Rows = len(prefiltered)
	case shortPage(read, f):
		// A short page is the last: the records before it and its own are
		// all there are, and counting them again would cost a round trip.
		out.Rows = int(f.offset) + read
	case total.Valid:
		out.Rows = int(total.Int64)
	default:
		stmt, args := f.bind(f.total, &own)
		if err := run.get(ctx, &out.Rows, stmt, args...); err != nil {
			return listResult{}, fmt.Errorf("total: %w", err)
		}
	}
	return out, nil
}

// shortPage reports whether a page of f that found read records is the
// list's last, which tells the total.
func shortPage(read int, f *fastPlan) bool {
	return int64(read) < f.limit && (read > 0 || f.offset == 0)
}

// nameTable is the table of each kind of map of names that the page's
// statements read by id alone.
var nameTable = map[string]string{"users": "users", "dirs": "directory_values", "deals": "deals"}

// oneNameMap gives the statement that reads the names of the page's marks
// when they are of one kind, and that kind is one whose names any caller
// sees (not the counterparties', which crm_list_maps reads for the caller).
func oneNameMap(ids map[string]pq.Int64Array) (kind, stmt string) {
	if len(ids) != 1 {
		return "", ""
	}
	for kind := range ids {
		if nameTable[kind] == "" {
			return "", ""
		}
		return kind, `SELECT jsonb_object_agg(id, name) FROM ` + nameTable[kind] + ` WHERE account_id = $1 AND id = ANY ($2::bigint[])`
	}
	return "", ""
}

// pageMarks is a page of objects cut at its name marks (nameMark): the text
// before each mark and after the last, and each mark's kind and id ("" for
// a record without the user, counterparty or deal).
type pageMarks struct {
	text     []string // one more than marks
	kind, id []string
}

// readMarks cuts a page at its name marks.
func readMarks(page string) (pageMarks, error) {
	var m pageMarks
	for rest := page; ; {
		start := strings.IndexByte(rest, 1)
		if start < 0 {
			m.text = append(m.text, rest)
			return m, nil
		}
		end := strings.IndexByte(rest[start+1:], 1)
		if end < 0 {
			return pageMarks{}, fmt.Errorf("a name mark without its end")
		}
		kind, id, ok := strings.Cut(rest[start+1:start+1+end], "\x02")
		if !ok {
			return pageMarks{}, fmt.Errorf("a name mark without its kind")
		}
		m.text, m.kind, m.id = append(m.text, rest[:start]), append(m.kind, kind), append(m.id, id)
		rest = rest[start+end+2:]
	}
}

// ids are the ids the marks ask names for, by the kind of their map.
func (m pageMarks) ids() map[string]pq.Int64Array {
	ids := map[string]pq.Int64Array{}
	for i, id := range m.id {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			ids[m.kind[i]] = append(ids[m.kind[i]], n)
		}
	}
	return ids
}

// write writes the page with each mark as the JSON string of the name its
// map gives, the empty string where the map has none (nameCol coalesces a
// missing name), as the statement would have written it: the name's JSON
// text in the map, which PostgreSQL escapes as to_json does, is copied as it
// is (rawMembers).
func (m pageMarks) write(maps map[string]sql.NullString) (string, error) {
	names := map[string]map[string]string{}
	var out strings.Builder
	size := 0
	for _, text := range m.text {
		size += len(text)
	}
	out.Grow(size + 24*len(m.id))
	for i, text := range m.text[:len(m.id)] {
		byID, read := names[m.kind[i]]
		if !read {
			if js := maps[m.kind[i]]; js.Valid {
				var err error
				if byID, err = rawMembers(js.String); err != nil {
					return "", fmt.Errorf("map of %s: %w", m.kind[i], err)
				}
			}
			names[m.kind[i]] = byID
		}
		out.WriteString(text)
		if name, ok := byID[m.id[i]]; ok {
			out.WriteString(name)
		} else {
			out.WriteString(`""`)
		}
	}
	out.WriteString(m.text[len(m.id)])
	return out.String(), nil
}

// rawMembers reads a JSON object of names, as PostgreSQL writes a jsonb
// object whose keys are ids and whose values are strings or null: each key
// with its value's JSON text, a null value left out.
func rawMembers(js string) (map[string]string, error) {
	members := map[string]string{}
	i := skipBlanks(js, 0)
	if i == len(js) || js[i] != '{' {
		return nil, fmt.Errorf("not an object")
	}
	if i = skipBlanks(js, i+1); i < len(js) && js[i] == '}' {
		return members, nil
	}
	for {
		key, next, err := jsonStringAt(js, i)
		if err != nil {
			return nil, err
		}
		if strings.IndexByte(key, '\\') >= 0 {
			return nil, fmt.Errorf("a key with an escape")
		}
		if i = skipBlanks(js, next); i == len(js) || js[i] != ':' {
			return nil, fmt.Errorf("a key without its value")
		}
		switch i = skipBlanks(js, i+1); {
		case strings.HasPrefix(js[i:], "null"):
			next = i + len("null")
		default:
			var value string
			if value, next, err = jsonStringAt(js, i); err != nil {
				return nil, err
			}
			members[key[1:len(key)-1]] = value
		}
		switch i = skipBlanks(js, next); {
		case i < len(js) && js[i] == '}':
			return members, nil
		case i < len(js) && js[i] == ',':
			i = skipBlanks(js, i+1)
		default:
			return nil, fmt.Errorf("a member without a separator")
		}
	}
}

// jsonStringAt returns the JSON string that starts at js[i], with its quotes,
// and the index past it.
func jsonStringAt(js string, i int) (string, int, error) {
	if i >= len(js) || js[i] != '"' {
		return "", 0, fmt.Errorf("a string expected at %d", i)
	}
	for j := i + 1; j < len(js); j++ {
		switch js[j] {
		case '\\':
			j++
		case '"':
			return js[i : j+1], j + 1, nil
		}
	}
	return "", 0, fmt.Errorf("a string without its end")
}

// skipBlanks returns the index of the first byte of js from i that is not a
// blank of JSON.
func skipBlanks(js string, i int) int {
	for i < len(js) && (js[i] == ' ' || js[i] == '\n' || js[i] == '\t' || js[i] == '\r') {
		i++
	}
	return i
}
