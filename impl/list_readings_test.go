package impl_test

import (
	"slices"
	"testing"
)

// TestListReadings covers two readings of the interface: an empty user_ids is
// as omitted (note 2 of the list: the token owner's own mail), and tasks sort
// by the status shown ("done", "in work"), as other text columns do.
func TestListReadings(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	f := e.listFixture(t, w)

	t.Run("empty user_ids is the owner's own mail", func(t *testing.T) {
		want := e.listIDs(t, w.member.token, 24, "columns=id")
		if len(want) == 0 {
			t.Fatal("the member has no mail in the fixture")
		}
		if got := e.listIDs(t, w.member.token, 24, "columns=id&user_ids="); !slices.Equal(got, want) {
			t.Fatalf("user_ids= gave %v, want %v (as omitted)", got, want)
		}
	})
	t.Run("empty user_ids is no filter elsewhere", func(t *testing.T) {
		want := e.listIDs(t, w.admin.token, 1, "columns=id")
		if got := e.listIDs(t, w.admin.token, 1, "columns=id&user_ids="); !slices.Equal(got, want) {
			t.Fatalf("user_ids= gave %v, want %v", got, want)
		}
	})
	t.Run("tasks sorted by the status shown", func(t *testing.T) {
		e.exec(t, `UPDATE tasks SET status_id = 2, done_at = now() WHERE account_id = $1 AND id = $2`, w.accountID, f.tasks["own"])
		for dir, wantFirst := range map[string]string{"0": "done", "1": "in work"} {
			r, rows := e.list(t, w.admin.token, 2, "columns=id,status&sorting_column=status&sorting_direction="+dir)
			if r.Status != "success" || len(rows) < 2 {
				t.Fatalf("%s", r.Raw)
			}
			if got := rows[0]["status"]; got != wantFirst {
				t.Errorf("direction %s: first status %v, want %q", dir, got, wantFirst)
			}
		}
	})
}
