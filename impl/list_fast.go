package impl

import (
	"database/sql/driver"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/lib/pq"
)

// The universal list in one call of crm_list (db/functions/list.sql): the
// request's statements are each of one table, so that on Citus they run on
// the account's node with their plans kept, as every hot request does
// (docs/scale-out.md). What the general statements of list.go read through
// joins, these read from maps of names that crm_list builds for the page's
// records alone: a column of a joined user, directory value, counterparty,
// deal or money account becomes a lookup in the map of its kind, by the id
// its join declares. A filter on another table (a counterparty's e-mail,
// phone or name) becomes a prefilter: the ids of the records it keeps, read
// first. What this form cannot express (a join the module needs for every row,
// a sort by the name of a counterparty, deal or money account, two
// prefilters, the mail module's mailboxes) the general statements serve.

// fastModules are the modules the function serves.
var fastModules = map[int]bool{ModuleCompanies: true, ModuleTasks: true, ModuleDocuments: true,
	ModuleFinance: true, ModuleDeals: true, ModuleGoods: true}

// The parameters every statement of crm_list has before the request's own:
// the function's values (db/functions/list.sql).
const (
	fastAccount      = "$1"
	fastVisible      = "$2"
	fastPage         = "$3"
	fastPrefiltered  = "$9"
	fastOwnParams    = 10
	fastMapUsers     = "$4"
	fastMapDirs      = "$5"
	fastMapCompanies = "$6"
	fastMapDeals     = "$7"
	fastMapMoney     = "$8"
	fastCompanyRows  = "$10"
)

// mapOf names the map of names of each table a module joins, and the kind
// crm_list knows it by; a join of another table is not served here.
var mapOf = map[string]struct{ param, kind string }{
	"users":            {fastMapUsers, "users"},
	"directory_values": {fastMapDirs, "dirs"},
	"companies":        {fastMapCompanies, "companies"},
	"deals":            {fastMapDeals, "deals"},
	"money_accounts":   {fastMapMoney, "money_accounts"},
}

// newFastSQL starts a statement of crm_list for p: {acc} and {visibleUsers}
// are crm_list's own parameters, the request's values follow them.
func newFastSQL(p *Principal) *sqlText {
	q := sqlFor(p)
	q.args = make([]any, fastOwnParams)
	q.names = make([]string, fastOwnParams)
	q.set("acc", fastAccount)
	q.set("visibleUsers", fastVisible+"::bigint[]")
	return q
}

// fastList is a request of the list in crm_list's form, being built.
type fastList struct {
	prefilter string // the statement of the prefilter, "" for none
	byName    bool   // the prefilter is the counterparties' name, which keeps the live ones the caller sees
}

// prefilterCompanies makes the e-mail, phone and name filters of the
// counterparties prefilters of crm_list.
func (q *listQuery) prefilterCompanies(name, v string) {
	switch name {
	case "email":
		// Of the counterparty or of its contact persons: both are rows of emails.
		q.fast.prefilter = `SELECT array_agg(DISTINCT e.company_id) AS ids FROM emails e
			WHERE e.account_id = {acc} AND lower(e.email) = lower(` + q.arg(v) + `::text)`
	case "phone":
		// The ending's digits as a range of the index phones_digits_suffix as
		// well as a LIKE: the statement is prepared, and a plan made for any
		// pattern (Citus keeps such a plan on the shard) cannot turn LIKE into
		// a range; every digit sorts below ':'.
		suffix := q.arg(reverseString(onlyDigits(v)))
		q.fast.prefilter = `SELECT array_agg(DISTINCT ph.company_id) AS ids FROM phones ph
			WHERE ph.account_id = {acc} AND reverse(ph.phone_digits) ~>=~ ` + suffix + `::text
			  AND reverse(ph.phone_digits) ~<~ (` + suffix + `::text || ':') AND reverse(ph.phone_digits) LIKE ` + suffix + `::text || '%'`
	case "name":
		// company_names (db/migrations/0066_company_names.sql): the live
		// counterparties' lower-cased names and owners.
		q.fast.prefilter = `SELECT array_agg(s.id) AS ids FROM company_names s
			WHERE s.account_id = {acc} AND s.name_lc LIKE '%' || lower(` + q.arg(escapeLike(v)) + `::text) || '%' AND ` +
			q.p.seesOwner("s.user_id")
		q.fast.byName = true
	}
}

// fastEligible reports whether crm_list serves a request of module m with
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

// fastExpr rewrites an expression of the general statements into crm_list's
// form: a field of a join becomes a lookup in its map by the join's id
// (itself rewritten when it is a field of another join, such as co.type_id).
// A map of names gives the name of a user, directory value, counterparty or
// deal; a counterparty's other fields come from the map of its rows, a money
// account's from an object. used collects the maps the lookups read.
func (m *listModule) fastExpr(expr string, used map[string]bool) string {
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
			id := "(" + m.fastExpr(j.idCol, used) + ")::text"
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

// fastListCall is the call of crm_list.
const fastListCall = `SELECT total AS rows, value FROM crm_list($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`

// fastCall is the call of crm_list that answers r, whose query was built in
// crm_list's form (newFastSQL).
func (r *listRequest) fastCall() (string, []any, error) {
	q, fl, columns, sortExpr, dir := r.q, r.q.fast, r.columns, r.sortExpr, r.dir
	m, p := q.m, q.p
	// Filtered, for the total: other than by the prefilter alone.
	filtered := len(r.filters) > 1 || len(r.filters) == 1 && fl.prefilter == ""
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
	// One pass: every name comes from a small table, whose map crm_list
	// builds whole before the page; the page's statement then writes the rows.
	onePass := !byPrefilter
	for kind := range maps {
		if kind != "users" && kind != "dirs" {
			onePass = false
		}
	}
	where := strings.Join(q.where, " AND ")
	if fl.prefilter != "" {
		where += " AND " + m.alias + ".id = ANY (" + fastPrefiltered + "::bigint[])"
	}
	// A column is `expr AS "name"` (listQuery.columns). The object of a row
	// is written as row_to_json writes one, members in the order asked,
	// without blanks: each member's value is its JSON text.
	lookups := map[string]bool{}
	members := make([]string, len(columns))
	for i, c := range columns {
		at := strings.LastIndex(c, ` AS "`)
		sep := ","
		if i == 0 {
			sep = "{"
		}
		members[i] = "'" + sep + `"` + c[at+5:len(c)-1] + `":' || coalesce(to_json(` + m.fastExpr(c[:at], lookups) + ")::text, 'null')"
	}
	object := strings.Join(members, " || ") + " || '}'"
	order := m.fastExpr(q.order(sortExpr, dir), lookups)
	if lookups["company_rows"] {
		onePass = false
		maps["company_rows"] = true
	}
	var rows string
	switch {
	case onePass:
		rows = "SELECT " + object + " AS j FROM " + m.from + " WHERE " + where +
			" ORDER BY " + order + " LIMIT {limit} OFFSET {offset}"
		for kind := range maps {
			if !slices.Contains(sortMaps, kind) {
				sortMaps = append(sortMaps, kind)
			}
		}
		maps = map[string]bool{}
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
	if !filtered && fl.prefilter == "" {
		if mod, kind, ok := fastCount(m, p); ok {
			countModule, countKind, total = &mod, kind, ""
		}
	}
	prefilter, rows, value, total := q.expand(fl.prefilter), q.expand(rows), q.expand(value), q.expand(total)
	types, args, err := fastArgs(q.args[fastOwnParams:])
	if err != nil {
		return "", nil, err
	}
	return fastListCall, []any{p.AccountID, p.UserID, p.Role, p.DepartmentID, p.TimeZone,
		prefilter, rows, value, total, types, pq.Array(args), pq.Array(keys(maps)), pq.Array(sortMaps),
		byPrefilter, dir == "DESC", r.perPage, int64(r.page-1) * int64(r.perPage), onePass, countModule, countKind}, nil
}

// fastCount tells crm_list where the total of an unfiltered list of m is kept
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

// fastArgs gives crm_list the request's values: their types, as the list of a
// PREPARE after crm_list's own (", bigint, text"), and their text.
func fastArgs(values []any) (string, []*string, error) {
	var types strings.Builder
	texts := make([]*string, len(values))
	for i, v := range values {
		typ, text, err := typedText(v)
		if err != nil {
			return "", nil, fmt.Errorf("list parameter %d: %w", i+fastOwnParams+1, err)
		}
		types.WriteString(", " + typ)
		texts[i] = text
	}
	return types.String(), texts, nil
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
