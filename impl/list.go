package impl

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
)

// The universal list (POST /common/list/paging/{module}) reads every module
// through one machine: a module declares its table, joins, columns, filters and
// access rule (list_modules.go), and a request picks columns, filters and a sort
// from those declarations only. Values never enter the SQL text; identifiers come
// from the declarations (or, for ADD_ columns, from the account's field
// definitions, whose names the schema restricts to [A-Za-z0-9_]). Declarations
// are SQL fragments with the slots of sqlFor ({acc}, {tz}, {me}, ...).

// listColumn is one column of a module.
type listColumn struct {
	expr  string   // the value, in terms of the module's aliases
	sort  string   // what to sort by, when not expr (a timestamp rather than its text)
	joins []string // names of the module's joins the expression needs
}

// listJoin is a named join of a module: a LEFT JOIN of table, whose id is
// idCol (a column of the module's table or of another join), by the alias
// name. seen: only the rows the caller may open (joinCounterparty).
type listJoin struct {
	name, sql    string
	table, idCol string
	seen         bool
}

// listFilter adds the condition of one filter value to a query.
type listFilter func(q *listQuery, value string) error

// listModule is the declaration of one module of the list.
type listModule struct {
	code           int
	from           string     // the module's table with its alias
	inner          string     // joins every row needs (they also restrict the rows), or ""
	alias          string     // alias of the table whose id identifies a record
	always         string     // a condition every query has (such as "not deleted"), or ""
	joins          []listJoin // LEFT JOINs the columns may need, each after those it uses
	columns        map[string]listColumn
	defaultColumns string // used when columns is omitted; "" makes columns required
	fields         int    // module of field_definitions for ADD_ columns; 0: none
	filters        map[string]listFilter
	visible        func(q *listQuery) string // the access-level condition
	count          func(q *listQuery) string // the unfiltered total from list_counts; nil or "": count rows
	ownerScoped    bool                      // user_ids chooses whose records (mail), so it does not stop count
}

// listQuery is one request being turned into SQL.
type listQuery struct {
	*sqlText
	ctx       context.Context
	s         *Server
	p         *Principal
	m         *listModule
	where     []string        // conditions, ANDed
	colJoins  map[string]bool // joins the requested columns need
	sortJoins map[string]bool // joins the sort needs
	owners    []int64         // user_ids, when given
	fields    map[string]bool // names of the account's additional fields, read once when needed
	contains  string          // the placeholder of the pattern of the last text filter (containsFilter)
	fast      *fastList       // the request in the fast form (list_fast.go), or nil
}

// CommonListPaging implements POST /common/list/paging/{module}.
func (s *Server) CommonListPaging(ctx context.Context, req gen.CommonListPagingRequestObject) (gen.CommonListPagingResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m := listModules[int(req.Module)]
	if m == nil { // the contract's enum lets only known codes through
		return nil, badRequest("module %d does not exist", req.Module)
	}
	lq, err := s.newListQuery(ctx, p, m, req.Params)
	if err != nil {
		return nil, err
	}
	q, filters, sortExpr, dir, page, perPage := lq.q, lq.filters, lq.sortExpr, lq.dir, lq.page, lq.perPage
	if q.fast != nil {
		plan, err := lq.fastCall()
		if err != nil {
			return nil, err
		}
		// Planned for their values (a filter's value decides between the
		// order's index and the filter's), generic where that costs no more.
		out, err := runFastList(ctx, s.stmts(ctx), p, plan, s.call(listMapsCall))
		if err != nil {
			return nil, fmt.Errorf("list module %d: %w", m.code, err)
		}
		return envelopeReply(successList(out.Value, out.Rows, page, perPage)), nil
	}
	if m.code == ModuleCompanies && sortExpr == "" && len(filters) == 1 && filters[0].name == "name" {
		return s.companiesByName(ctx, q, dir, page, perPage)
	}

	var out listResult
	onlyOwners := len(filters) == 1 && filters[0].name == "user_ids" && m.ownerScoped
	if m.count != nil && (len(filters) == 0 || onlyOwners) {
		if counted := m.count(q); counted != "" {
			// Unfiltered: the kept total and the page through the order's index.
			q.set("counted", counted)
			err = s.generic(ctx).get(ctx, &out, q.expand(orderedSQL), q.args...)
			if err != nil {
				return nil, fmt.Errorf("list module %d: %w", m.code, err)
			}
			return envelopeReply(successList(out.Value, out.Rows, page, perPage)), nil
		}
	}
	// Filtered: read the matches once when they are few, else count them and
	// read the page through the order's index.
	q.set("key", cmp.Or(sortExpr, "NULL"))
	q.set("dir", dir)
	q.set("scanOnce", strconv.Itoa(s.scanOnce+1))
	q.set("counted", "SELECT count(*) FROM matched")
	if err := s.stmts(ctx).get(ctx, &out, q.expand(scanOnceSQL), q.args...); err != nil {
		return nil, fmt.Errorf("list module %d: %w", m.code, err)
	}
	if out.Rows > s.scanOnce {
		q.set("counted", "SELECT count(*) FROM {from} {inner} WHERE {where}")
		if err := s.stmts(ctx).get(ctx, &out, q.expand(orderedSQL), q.args...); err != nil {
			return nil, fmt.Errorf("list module %d: %w", m.code, err)
		}
	}
	env := successList(out.Value, out.Rows, page, perPage)
	return envelopeReply(env), nil
}

// listRequest is a request of the list turned into SQL: its conditions and
// slots in q, and what the statements are built from.
type listRequest struct {
	q             *listQuery
	filters       []listFilterValue
	columns       []string // `expr AS "name"`, in the order asked
	sortExpr, dir string
	page, perPage int
}

// newListQuery builds the conditions, columns and order of a request of
// module m, in the fast form where list_fast.go serves it.
func (s *Server) newListQuery(ctx context.Context, p *Principal, m *listModule, params gen.CommonListPagingParams) (*listRequest, error) {
	perPage, page := 50, 1
	if params.RecordsOnpage != nil {
		perPage = *params.RecordsOnpage
	}
	if params.Page != nil {
		page = *params.Page
	}

	filters := listFiltersOf(params)
	q := &listQuery{ctx: ctx, s: s, p: p, m: m, colJoins: map[string]bool{}, sortJoins: map[string]bool{}}
	if s.fastPath && fastEligible(m, filters, params.SortingColumn) {
		q.sqlText, q.fast = newFastSQL(p), &fastList{}
	} else {
		q.sqlText = sqlFor(p)
	}
	q.where = append(q.where, m.alias+".account_id = {acc}")
	if m.always != "" {
		q.where = append(q.where, m.always)
	}

	if err := q.applyFilters(filters); err != nil {
		return nil, err
	}
	q.where = append(q.where, m.visible(q))

	columns, err := q.columns(params.Columns)
	if err != nil {
		return nil, err
	}
	sortExpr, err := q.sortBy(params.SortingColumn)
	if err != nil {
		return nil, err
	}
	dir := "DESC"
	if params.SortingDirection != nil && *params.SortingDirection == 0 {
		dir = "ASC"
	}
	q.bind("limit", perPage)
	q.bind("offset", (page-1)*perPage)
	q.set("columns", strings.Join(columns, ", "))
	q.set("order", q.order(sortExpr, dir))
	q.set("where", strings.Join(q.where, " AND "))
	q.set("from", m.from)
	q.set("inner", m.inner)
	q.set("alias", m.alias)
	q.set("colJoins", q.joinSQL(q.colJoins))
	q.set("sortJoins", q.joinSQL(q.sortJoins))

	return &listRequest{q: q, filters: filters, columns: columns, sortExpr: sortExpr, dir: dir, page: page, perPage: perPage}, nil
}

// companiesByName is the counterparty list filtered by a part of the name
// alone, in the default order (by id): its total and its page's ids come from
// company_names (db/migrations/0066_company_names.sql), the narrow lower-cased
// copy of the live counterparties' names and owners, so that a frequent term's
// exact total rechecks narrow rows rather than the counterparties' own. The
// page's columns are read from companies as in every list; the reply is the
// same as through c.name ILIKE.
func (s *Server) companiesByName(ctx context.Context, q *listQuery, dir string, page, perPage int) (gen.CommonListPagingResponseObject, error) {
	// The pattern is the name filter's own placeholder (containsFilter),
	// built once in a subquery: in the condition itself a generic plan would
	// build it again for every row it reads (13,346 rows of an account: 6.3
	// ms against 2.7 ms).
	q.set("narrow", "s.account_id = {acc} AND s.name_lc LIKE (SELECT '%' || lower("+q.contains+"::text) || '%') AND "+
		q.p.seesOwner("s.user_id"))
	q.set("dir", dir)
	q.set("counted", "SELECT count(*) FROM matched")
	var out listResult
	if err := s.stmts(ctx).get(ctx, &out, q.expand(companiesByNameSQL), q.args...); err != nil {
		return nil, fmt.Errorf("list module %d by name: %w", q.m.code, err)
	}
	return envelopeReply(successList(out.Value, out.Rows, page, perPage)), nil
}

// companiesByNameSQL is the statement of companiesByName. It reads the ids of
// the matches once, through the trigram index, and takes the total and the
// page from them: the planner cannot tell a rare term from a frequent one, and
// a page through the order of ids would scan thousands of rows past a rare
// term's few matches.
const companiesByNameSQL = `
	WITH matched AS MATERIALIZED (SELECT s.id FROM company_names s WHERE {narrow}),
	page AS (
		SELECT p.id, p.n
		  FROM unnest(ARRAY(SELECT id FROM matched ORDER BY id {dir} LIMIT {limit} OFFSET {offset}))
		       WITH ORDINALITY AS p (id, n))
	` + pageSQL

// listFilterValue is one filter given to a request: a query parameter, or an entry
// of a ready filter.
type listFilterValue struct {
	name, value string
}

// listFiltersOf lists the filter parameters of a request, in a fixed order.
func listFiltersOf(p gen.CommonListPagingParams) []listFilterValue {
	var fs []listFilterValue
	addInt := func(name string, v *int64) {
		if v != nil {
			fs = append(fs, listFilterValue{name, strconv.FormatInt(*v, 10)})
		}
	}
	addStr := func(name string, v *string) {
		if v != nil {
			fs = append(fs, listFilterValue{name, *v})
		}
	}
	addInt("company_id", p.CompanyId)
	addInt("deal_id", p.DealId)
	addInt("id", p.Id)
	if p.UserIds != nil && *p.UserIds != "" { // empty: as omitted (interface, list note 2)
		addStr("user_ids", p.UserIds)
	}
	addStr("date1", p.Date1)
	addStr("date2", p.Date2)
	addStr("tags", p.Tags)
	addInt("type_id", p.TypeId)
	addInt("status_id", p.StatusId)
	addStr("name", p.Name)
	addStr("email", p.Email)
	addStr("phone", p.Phone)
	addStr("tax_id", p.TaxId)
	addStr("user_filter_ids", p.UserFilterIds)
	if p.Segment != nil {
		fs = append(fs, listFilterValue{"segment", strconv.Itoa(int(*p.Segment))})
	}
	addStr("subject", p.Subject)
	addStr("to_address", p.ToAddress)
	addStr("from_address", p.FromAddress)
	return fs
}

// applyFilters adds the conditions of the filters; a filter the module does not
// support is an error.
func (q *listQuery) applyFilters(fs []listFilterValue) error {
	for _, f := range fs {
		if f.name == "user_filter_ids" {
			if err := q.applyReadyFilters(f.value); err != nil {
				return err
			}
			continue
		}
		apply, ok := q.m.filters[f.name]
		if !ok {
			return badRequest("filter %s is not supported by module %d", f.name, q.m.code)
		}
		if err := apply(q, f.value); err != nil {
			return err
		}
	}
	return nil
}

// applyReadyFilters applies the saved definitions of ready filters: each is a JSON
// object of filter parameters, and all of them apply together.
func (q *listQuery) applyReadyFilters(ids string) error {
	if _, ok := q.m.filters["user_filter_ids"]; !ok {
		return badRequest("filter user_filter_ids is not supported by module %d", q.m.code)
	}
	list, err := parseIDs("user_filter_ids", ids)
	if err != nil {
		return err
	}
	var defs []struct {
		ID         int64  `db:"id"`
		Definition []byte `db:"definition"`
	}
	err = q.s.db(q.ctx).SelectContext(q.ctx, &defs, `
		SELECT id, definition FROM user_filters WHERE account_id = $1 AND module = $2 AND id = ANY ($3) ORDER BY id`,
		q.p.AccountID, q.m.code, pq.Array(list))
	if err != nil {
		return fmt.Errorf("read ready filters: %w", err)
	}
	if len(defs) != len(uniqueIDs(list)) {
		return badRequest("user_filter_ids: a ready filter of module %d does not exist", q.m.code)
	}
	for _, d := range defs {
		var def map[string]any
		if err := json.Unmarshal(d.Definition, &def); err != nil {
			return fmt.Errorf("ready filter %d: %w", d.ID, err)
		}
		fs, err := readyFilterValues(d.ID, def)
		if err != nil {
			return err
		}
		for _, f := range fs {
			if f.name == "user_filter_ids" {
				return badRequest("ready filter %d refers to other ready filters", d.ID)
			}
		}
		if err := q.applyFilters(fs); err != nil {
			return badRequest("ready filter %d: %s", d.ID, err.Error())
		}
	}
	return nil
}

// readyFilterValues turns a ready filter's definition into filter values, in a
// stable order; values are strings or numbers.
func readyFilterValues(id int64, def map[string]any) ([]listFilterValue, error) {
	names := make([]string, 0, len(def))
	for name := range def {
		names = append(names, name)
	}
	slices.Sort(names)
	var fs []listFilterValue
	for _, name := range names {
		switch v := def[name].(type) {
		case string:
			fs = append(fs, listFilterValue{name, v})
		case float64:
			fs = append(fs, listFilterValue{name, strconv.FormatFloat(v, 'f', -1, 64)})
		default:
			return nil, badRequest("ready filter %d: the value of %s is neither a string nor a number", id, name)
		}
	}
	return fs, nil
}

var listColumnName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// columns resolves the requested column names to their expressions, in the order
// requested; an unknown column is an error that names it.
func (q *listQuery) columns(requested *string) ([]string, error) {
	spec := q.m.defaultColumns
	if requested != nil {
		spec = *requested
	}
	if spec == "" {
		return nil, badRequest("columns is required for module %d", q.m.code)
	}
	names := strings.Split(spec, ",")
	seen := map[string]bool{}
	var exprs []string
	for _, name := range names {
		if seen[name] {
			return nil, badRequest("columns: %q is requested twice", name)
		}
		seen[name] = true
		expr, err := q.column(name)
		if err != nil {
			return nil, err
		}
		// The name is a declared column or a checked ADD_ name: quoting makes it the JSON key.
		exprs = append(exprs, expr+` AS "`+name+`"`)
	}
	return exprs, nil
}

// column returns the expression of one column, noting the joins it needs.
func (q *listQuery) column(name string) (string, error) {
	if c, ok := q.m.columns[name]; ok {
		for _, j := range c.joins {
			q.colJoins[j] = true
		}
		return c.expr, nil
	}
	if field, ok := strings.CutPrefix(name, "ADD_"); ok && q.m.fields != 0 && listColumnName.MatchString(field) {
		if q.fields == nil {
			var names []string
			err := q.s.db(q.ctx).SelectContext(q.ctx, &names, `SELECT name FROM field_definitions WHERE account_id = $1 AND module = $2`,
				q.p.AccountID, q.m.fields)
			if err != nil {
				return "", fmt.Errorf("read field definitions: %w", err)
			}
			q.fields = make(map[string]bool, len(names))
			for _, n := range names {
				q.fields[n] = true
			}
		}
		if q.fields[field] {
			return q.m.alias + ".extra -> " + q.arg(field) + "::text", nil
		}
	}
	return "", badRequest("columns: unknown column %q of module %d", name, q.m.code)
}

// sortBy returns the expression to sort by; records are newest first by default.
func (q *listQuery) sortBy(column *string) (string, error) {
	if column == nil || *column == "" || *column == "id" {
		return "", nil
	}
	if c, ok := q.m.columns[*column]; ok {
		for _, j := range c.joins {
			q.sortJoins[j] = true
		}
		if c.sort != "" {
			return c.sort, nil
		}
		return c.expr, nil
	}
	if strings.HasPrefix(*column, "ADD_") {
		expr, err := q.column(*column)
		if err != nil {
			return "", badRequest("sorting_column: unknown column %q of module %d", *column, q.m.code)
		}
		return expr, nil
	}
	return "", badRequest("sorting_column: unknown column %q of module %d", *column, q.m.code)
}

// order is the ORDER BY of a list: the sort key, then the id in the same
// direction, so that pages never repeat or skip a record.
func (q *listQuery) order(sortExpr, dir string) string {
	order := q.m.alias + ".id " + dir
	if sortExpr != "" {
		order = sortExpr + " " + dir + ", " + order
	}
	return order
}

// orderedSQL is the statement of a list whose total is given by {counted}: the
// page's ids come through the sort order (an index when there is one), with only
// the joins the sort needs. Values, limit and offset are placeholders, so one
// shape of request is one prepared statement.
const orderedSQL = `
	WITH page AS (
		SELECT p.id, p.n
		  FROM unnest(ARRAY(SELECT {alias}.id FROM {from} {inner} {sortJoins} WHERE {where} ORDER BY {order} LIMIT {limit} OFFSET {offset}))
		       WITH ORDINALITY AS p (id, n))
	` + pageSQL

// scanOnceSQL is the statement of a filtered list: it reads the ids (and sort
// keys) of at most Config.ListScanOnce + 1 matches once, and takes the total and
// the sorted page from them. A larger total means there were more.
const scanOnceSQL = `
	WITH matched AS MATERIALIZED (SELECT {alias}.id, {key} AS k FROM {from} {inner} {sortJoins} WHERE {where} LIMIT {scanOnce}),
	page AS (
		SELECT p.id, p.n
		  FROM unnest(ARRAY(SELECT id FROM matched ORDER BY k {dir}, id {dir} LIMIT {limit} OFFSET {offset}))
		       WITH ORDINALITY AS p (id, n))
	` + pageSQL

// pageSQL reads the reply of a list after its WITH: the total ({counted}), and
// the page as a JSON array of objects with the requested columns, computed for
// the page's rows only, in the order of the page (ARRAY keeps the subquery's
// order; ORDINALITY numbers it).
const pageSQL = `
	SELECT ({counted}) AS rows,
	       coalesce((SELECT '[' || string_agg(r.j, ',' ORDER BY r.n) || ']'
	                   FROM (SELECT page.n, (SELECT row_to_json(x)::text FROM (SELECT {columns}) x) AS j
	                           FROM page
	                           JOIN {from} ON {alias}.account_id = {acc} AND {alias}.id = page.id
	                           {inner} {colJoins}) r), '[]') AS value`

// joinSQL lists the module's joins that are needed, in declaration order.
func (q *listQuery) joinSQL(needed map[string]bool) string {
	var b strings.Builder
	for _, j := range q.m.joins {
		if needed[j.name] {
			b.WriteString(" ")
			b.WriteString(j.sql)
		}
	}
	return b.String()
}

// ---- filters shared by modules

// eqFilter keeps records whose column equals a positive id.
func eqFilter(col string) listFilter {
	return func(q *listQuery, v string) error {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			return badRequest("filter on %s: %q is not a positive id", col, v)
		}
		q.where = append(q.where, col+" = "+q.arg(id))
		return nil
	}
}

// ownersFilter (user_ids) keeps records whose responsible user is one of the ids;
// it only narrows what the access level lets the caller see.
func ownersFilter(col string) listFilter {
	return func(q *listQuery, v string) error {
		ids, err := parseIDs("user_ids", v)
		if err != nil {
			return err
		}
		q.owners = ids
		q.where = append(q.where, col+" = ANY ("+q.arg(pq.Array(ids))+")")
		return nil
	}
}

// parseListDate reads YYYY-MM-DD, or YYYY.MM.DD as the mail filter's
// documentation writes it.
func parseListDate(name, v string) (string, error) {
	d, err := time.Parse("2006-01-02", strings.ReplaceAll(v, ".", "-"))
	if err != nil {
		return "", badRequest("%s: %q is not a date (YYYY-MM-DD)", name, v)
	}
	return d.Format("2006-01-02"), nil
}

// dateFilter keeps records whose date column is on or after (from) or on or
// before (to) the given day. A timestamp column is compared with the day's
// bounds in the token owner's time zone.
func dateFilter(col string, timestamp, from bool) listFilter {
	return func(q *listQuery, v string) error {
		name := "date2"
		if from {
			name = "date1"
		}
		d, err := parseListDate(name, v)
		if err != nil {
			return err
		}
		day := q.arg(d) + "::date"
		switch {
		case timestamp && from:
			q.where = append(q.where, col+" >= ("+day+"::timestamp AT TIME ZONE {tz}::text)")
		case timestamp:
			q.where = append(q.where, col+" < (("+day+" + 1)::timestamp AT TIME ZONE {tz}::text)")
		case from:
			q.where = append(q.where, col+" >= "+day)
		default:
			q.where = append(q.where, col+" <= "+day)
		}
		return nil
	}
}

// tagsFilter keeps records that have every one of the comma-separated tags.
func tagsFilter(col string) listFilter {
	return func(q *listQuery, v string) error {
		tags := splitTags(v)
		if len(tags) == 0 {
			return badRequest("tags: no tag given")
		}
		q.where = append(q.where, col+" @> "+q.arg(tags)+"::text[]")
		return nil
	}
}

// containsFilter keeps records whose text column contains the value,
// case-insensitively; LIKE's wildcards in the value match themselves.
func containsFilter(col string) listFilter {
	return func(q *listQuery, v string) error {
		if v == "" {
			return badRequest("filter on %s: empty text", col)
		}
		if q.fast != nil && q.m.code == ModuleCompanies && col == "c.name" {
			q.prefilterCompanies("name", v)
			return nil
		}
		q.contains = q.arg(escapeLike(v))
		q.where = append(q.where, col+" ILIKE '%' || "+q.contains+"::text || '%'")
		return nil
	}
}

// intFilter keeps records whose column equals an integer.
func intFilter(col string) listFilter {
	return func(q *listQuery, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return badRequest("filter on %s: %q is not a number", col, v)
		}
		q.where = append(q.where, col+" = "+q.arg(n))
		return nil
	}
}

func onlyDigits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func reverseString(s string) string {
	b := []byte(s) // digits only: bytes are runes
	slices.Reverse(b)
	return string(b)
}

func uniqueIDs(ids []int64) map[int64]bool {
	set := make(map[int64]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}
