package demo

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crmservice/crm/db/dbtest"
)

// reports collects the progress reports of a load.
type reports struct {
	mu   sync.Mutex
	list []Progress
}

func (r *reports) add(p Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, p)
}

func (r *reports) all() []Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list)
}

// TestLoadProgress loads while another transaction holds the demo's lock, so
// that the load first waits, and checks what it reports while it waits,
// while it creates the account and when it is done; then a second load, which
// only issues tokens.
func TestLoadProgress(t *testing.T) {
	// Needs a database of its own: the first load must create the demo account.
	dbtest.RequireOwnDatabase(t)
	db := dbtest.New(t)
	ctx := context.Background()
	planned := tokenRows
	var stepNames []string
	for _, s := range createSteps() {
		planned += s.rows
		stepNames = append(stepNames, s.name)
	}

	holder, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.Exec(`SELECT pg_advisory_xact_lock($1)`, demoLockKey); err != nil {
		t.Fatal(err)
	}
	var got reports
	type result struct {
		demo *Demo
		err  error
	}
	done := make(chan result, 1)
	go func() {
		d, err := Load(ctx, db, time.Now(), WithProgress(5*time.Millisecond, got.add))
		done <- result{d, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(got.all()) < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	waiting := got.all()
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("Load: %v", res.err)
	}
	all := got.all()

	if len(waiting) < 3 {
		t.Fatalf("%d reports in 10s of waiting for the lock, want one every 5ms", len(waiting))
	}
	for _, p := range waiting {
		if p.Step != "waiting for the lock" || p.Rows != 0 || p.Total != planned || p.Left != 0 || p.Done {
			t.Errorf("report while waiting %+v, want step \"waiting for the lock\", no rows, %d planned, nothing left known", p, planned)
		}
	}
	for i := 1; i < len(all); i++ {
		if all[i].Elapsed < all[i-1].Elapsed || all[i].Rows < all[i-1].Rows {
			t.Errorf("report %d %+v goes back from %+v", i, all[i], all[i-1])
		}
	}
	creating := slices.IndexFunc(all, func(p Progress) bool {
		return slices.Contains(stepNames, p.Step) && p.Rows > 0 && p.Rows < p.Total && p.Left > 0
	})
	if creating < 0 {
		t.Errorf("no report while creating names a step with rows written, more to come and time left: %+v", all)
	}

	// The last report counts every row the load wrote: the account and every
	// row of its tables but list_counts, company_names and kpi_daily, which
	// triggers keep.
	var written int
	for table, byAccount := range rowsByAccount(t, db) {
		if table != "list_counts" && table != "company_names" && table != "kpi_daily" {
			written += byAccount[res.demo.AccountID]
		}
	}
	written++
	last := all[len(all)-1]
	if !last.Done || last.Step != "done" || last.Rows != written || last.Total != written || last.Left != 0 {
		t.Errorf("last report %+v, want done with %d rows of %d and nothing left", last, written, written)
	}
	// The plan of each step is measured from a load, so the first estimate is
	// close to what a load writes.
	if diff := float64(planned-written) / float64(written); diff < -0.1 || diff > 0.1 {
		t.Errorf("the steps plan %d rows, a load writes %d: update createSteps", planned, written)
	}
	t.Logf("%d reports; planned %d rows, wrote %d", len(all), planned, written)
	time.Sleep(20 * time.Millisecond)
	if n := len(got.all()); n != len(all) {
		t.Errorf("%d reports after Load returned", n-len(all))
	}

	// A second load finds the account and writes two tokens.
	var again reports
	if _, err := Load(ctx, db, time.Now(), WithProgress(time.Hour, again.add)); err != nil {
		t.Fatalf("second Load: %v", err)
	}
	second := again.all()
	if len(second) != 2 || second[0].Step != "waiting for the lock" || second[0].Total != planned {
		t.Errorf("second load's reports %+v, want the first at the start with %d rows planned, then the last", second, planned)
	}
	if p := second[len(second)-1]; !p.Done || p.Rows != tokenRows || p.Total != tokenRows {
		t.Errorf("second load's last report %+v, want done with the %d rows of the tokens", p, tokenRows)
	}
}
