package demo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
)

// Bulk inserts.

// demoColumn is one column of a bulk insert: the values go as one array
// parameter of type typ[], and expr turns the SQL of an element into what is
// stored.
type demoColumn struct {
	name string
	typ  string
	expr func(elem string) string
	n    int
	vals any
}

func asIs(elem string) string { return elem }

// nullIf stores the value zero (an SQL literal) as NULL.
func nullIf(zero string) func(string) string {
	return func(elem string) string { return "nullif(" + elem + ", " + zero + ")" }
}

func demoText(name string, v []string) demoColumn {
	return demoColumn{name, "text", asIs, len(v), pq.StringArray(v)}
}

// demoNullText stores "" as NULL.
func demoNullText(name string, v []string) demoColumn {
	return demoColumn{name, "text", nullIf("''"), len(v), pq.StringArray(v)}
}

func demoInt(name string, v []int64) demoColumn {
	return demoColumn{name, "bigint", asIs, len(v), pq.Int64Array(v)}
}

// demoRef stores 0 as NULL: an unset reference or optional number.
func demoRef(name string, v []int64) demoColumn {
	return demoColumn{name, "bigint", nullIf("0"), len(v), pq.Int64Array(v)}
}

func demoBool(name string, v []bool) demoColumn {
	return demoColumn{name, "boolean", asIs, len(v), pq.BoolArray(v)}
}

// demoAmount stores cents as a decimal amount.
func demoAmount(name string, cents []int64) demoColumn {
	s := make([]string, len(cents))
	for i, c := range cents {
		s[i] = fmt.Sprintf("%d.%02d", c/100, c%100)
	}
	return demoColumn{name, "numeric", asIs, len(s), pq.StringArray(s)}
}

// demoTime stores the zero time as NULL.
func demoTime(name string, v []time.Time) demoColumn {
	cast := func(elem string) string { return "nullif(" + elem + ", '')::timestamptz" }
	return demoColumn{name, "text", cast, len(v), pq.StringArray(demoFormatTimes(v, time.RFC3339Nano))}
}

// demoDate stores the dates of the times; the zero time as NULL.
func demoDate(name string, v []time.Time) demoColumn {
	cast := func(elem string) string { return "nullif(" + elem + ", '')::date" }
	return demoColumn{name, "text", cast, len(v), pq.StringArray(demoFormatTimes(v, time.DateOnly))}
}

// demoTags sends each row's tags joined by commas, since unnest flattens a
// two-dimensional array; tags never contain commas.
func demoTags(name string, v [][]string) demoColumn {
	s := make([]string, len(v))
	for i, tags := range v {
		s[i] = strings.Join(tags, ",")
	}
	split := func(elem string) string { return "string_to_array(" + elem + ", ',')" }
	return demoColumn{name, "text", split, len(s), pq.StringArray(s)}
}

func demoJSONCol(name string, v []string) demoColumn {
	cast := func(elem string) string { return elem + "::jsonb" }
	return demoColumn{name, "text", cast, len(v), pq.StringArray(v)}
}

func demoFormatTimes(v []time.Time, layout string) []string {
	s := make([]string, len(v))
	for i, t := range v {
		if !t.IsZero() {
			s[i] = t.Format(layout)
		}
	}
	return s
}

// insert adds one row of the account per element of the columns with a single
// INSERT ... SELECT FROM unnest and returns the new ids in the order of the
// elements: the rows are inserted in ordinality order, so their identity values
// ascend in that order. The account is the parameter $1 and the values are
// array parameters; table and column names come only from this package's code.
func (l *demoLoader) insert(table string, cols ...demoColumn) ([]int64, error) {
	names, exprs, params, aliases := []string{"account_id"}, []string{"$1"}, []string{}, []string{}
	args := []any{l.accountID}
	for i, c := range cols {
		if c.n != cols[0].n {
			return nil, fmt.Errorf("insert %s: column %s has %d values, %s has %d", table, c.name, c.n, cols[0].name, cols[0].n)
		}
		alias := "c" + strconv.Itoa(i)
		args = append(args, c.vals)
		names = append(names, c.name)
		exprs = append(exprs, c.expr("u."+alias))
		params = append(params, "$"+strconv.Itoa(len(args))+"::"+c.typ+"[]")
		aliases = append(aliases, alias)
	}
	q := "INSERT INTO " + table + " (" + strings.Join(names, ", ") + ")" +
		" SELECT " + strings.Join(exprs, ", ") +
		" FROM unnest(" + strings.Join(params, ", ") + ") WITH ORDINALITY AS u (" + strings.Join(aliases, ", ") + ", ord)" +
		" ORDER BY u.ord RETURNING id"
	var ids []int64
	if err := l.tx.SelectContext(l.ctx, &ids, q, args...); err != nil {
		return nil, fmt.Errorf("insert %s: %w", table, err)
	}
	if len(ids) != cols[0].n {
		return nil, fmt.Errorf("insert %s: %d rows inserted of %d", table, len(ids), cols[0].n)
	}
	l.progress.add(len(ids))
	slices.Sort(ids)
	return ids, nil
}

func demoEach[R, V any](rows []R, f func(*R) V) []V {
	out := make([]V, len(rows))
	for i := range rows {
		out[i] = f(&rows[i])
	}
	return out
}

func demoRepeat[V any](v V, n int) []V {
	out := make([]V, n)
	for i := range out {
		out[i] = v
	}
	return out
}
