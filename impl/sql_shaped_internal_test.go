package impl

import (
	"database/sql"
	"reflect"
	"testing"
)

// TestShapedSQLMatchesFreshExpansion holds the memo of shapedSQL to what
// expanding the templates gives: for every access shape, a second caller of the
// same shape with other values (account, user, department, time zone, id) gets
// the same text and the same arguments in the same places as a fresh
// expansion for that caller.
func TestShapedSQLMatchesFreshExpansion(t *testing.T) {
	dept := func(id int64) sql.NullInt64 { return sql.NullInt64{Int64: id, Valid: true} }
	pairs := map[string][2]*Principal{
		"admin": {
			{AccountID: 1, UserID: 2, Role: RoleAdmin, TimeZone: "UTC"},
			{AccountID: 7, UserID: 9, Role: RoleAdmin, TimeZone: "Europe/Riga", DepartmentID: dept(3)},
		},
		"department": {
			{AccountID: 1, UserID: 4, Role: RoleHead, TimeZone: "UTC", DepartmentID: dept(5)},
			{AccountID: 8, UserID: 6, Role: RoleHead, TimeZone: "Asia/Kolkata", DepartmentID: dept(11)},
		},
		"own": {
			{AccountID: 1, UserID: 12, Role: RoleMember, TimeZone: "UTC", DepartmentID: dept(5)},
			{AccountID: 3, UserID: 13, Role: RoleHead, TimeZone: "America/New_York"}, // a head without a department sees their own
		},
	}
	var memo shapedSQL
	for shape, pair := range pairs {
		t.Run(shape, func(t *testing.T) {
			for i, p := range pair {
				if got := p.accessShape(); got != shape {
					t.Fatalf("principal %d: shape %q, want %q", i, got, shape)
				}
			}
			build := func(p *Principal, id int64, m *shapedSQL) (string, []any) {
				q := sqlFor(p)
				q.bind("id", id)
				return m.expand(p.accessShape(), q, func() string { return companyCardText(p, q) })
			}
			build(pair[0], 100, &memo) // fills the memo
			gotText, gotArgs := build(pair[1], 200, &memo)
			var fresh shapedSQL
			wantText, wantArgs := build(pair[1], 200, &fresh)
			if gotText != wantText {
				t.Errorf("memoized text differs from a fresh expansion:\n%s\n---\n%s", gotText, wantText)
			}
			if !reflect.DeepEqual(gotArgs, wantArgs) {
				t.Errorf("arguments %v, a fresh expansion gives %v", gotArgs, wantArgs)
			}
		})
	}

	// A value passed with arg is never memoized: the next caller's text is
	// built again.
	var m shapedSQL
	calls := 0
	for _, v := range []int{1, 2} {
		q := newSQL()
		text, args := m.expand("x", q, func() string { calls++; return "SELECT " + q.arg(v) })
		if text != "SELECT $1" || len(args) != 1 || args[0] != v {
			t.Errorf("%q %v", text, args)
		}
	}
	if calls != 2 {
		t.Errorf("built %d times, want 2 (not memoized)", calls)
	}
}
