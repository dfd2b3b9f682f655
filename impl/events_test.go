package impl_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"
)

// feedPage is the decoded value of GET /event/list.
type feedPage struct {
	Events []feedEvent `json:"events"`
	Cursor string      `json:"cursor"`
	More   bool        `json:"more"`
}

type feedEvent struct {
	ID       int64          `json:"id"`
	Date     string         `json:"date"`
	UserID   *int64         `json:"user_id"`
	UserName string         `json:"user_name"`
	TokenID  *int64         `json:"token_id"`
	Module   int            `json:"module"`
	Entity   string         `json:"entity"`
	RecordID int64          `json:"record_id"`
	Action   string         `json:"action"`
	Changes  map[string]any `json:"changes"`
}

// feed reads one page of the event feed and checks its paging fields.
func (e *env) feed(t *testing.T, token string, q url.Values) feedPage {
	t.Helper()
	r := e.get(t, token, "/event/list?"+q.Encode())
	if r.Status != "success" {
		t.Fatalf("event list: %s", r.Raw)
	}
	page := decode[feedPage](t, r.Value)
	want := 0
	if len(page.Events) > 0 {
		want = 1
	}
	if r.Rows != len(page.Events) || r.Pages != want || r.Page != want {
		t.Fatalf("paging %d/%d/%d for %d events", r.Rows, r.Pages, r.Page, len(page.Events))
	}
	return page
}

// feedAll reads the whole feed from cursor on, n events per call, and returns
// the events and the last cursor.
func (e *env) feedAll(t *testing.T, token, cursor string, n int, extra url.Values) ([]feedEvent, string) {
	t.Helper()
	var all []feedEvent
	for range 10000 {
		q := url.Values{"records_onpage": {fmt.Sprint(n)}}
		for k, v := range extra {
			q[k] = v
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		page := e.feed(t, token, q)
		all = append(all, page.Events...)
		cursor = page.Cursor
		if !page.More {
			return all, cursor
		}
	}
	t.Fatal("the feed never ends")
	return nil, ""
}

// journalIDsByPosition lists the journal ids of an account in feed order.
func (e *env) journalIDsByPosition(t *testing.T, accountID int64) []int64 {
	t.Helper()
	var ids []int64
	if err := e.db.Select(&ids, `SELECT id FROM journal WHERE account_id = $1 ORDER BY position`, accountID); err != nil {
		t.Fatal(err)
	}
	return ids
}

func eventIDs(events []feedEvent) []int64 {
	ids := make([]int64, len(events))
	for i, ev := range events {
		ids[i] = ev.ID
	}
	return ids
}

func TestEventList(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	beta := e.newWorld(t, "beta")

	company, _ := newCompany(t, e, w, "Contoso", w.member) // by the admin: a company, its contact
	expectOK(t, e.post(t, w.member.token, "/company/update", map[string]any{"id": company, "note": "Call back"}))
	expectOK(t, e.post(t, w.member.token, "/task/insert", map[string]any{"company_id": company, "note": "x", "type_id": w.dirs[35][0]}))
	expectError(t, e.post(t, w.peer.token, "/task/insert", map[string]any{"company_id": company, "note": "x", "type_id": w.dirs[35][0]}), "404",
		"not found", "")
	newCompany(t, e, beta, "Beta's", beta.admin)

	t.Run("OK every event once, oldest first, with its fields", func(t *testing.T) {
		all, _ := e.feedAll(t, w.admin.token, "", 2, nil)
		if got, want := eventIDs(all), e.journalIDsByPosition(t, w.accountID); !slices.Equal(got, want) {
			t.Fatalf("events %v, want the journal %v", got, want)
		}
		var upd feedEvent
		for _, ev := range all {
			if ev.Action == "update" {
				upd = ev
			}
		}
		if upd.Entity != "company" || upd.Action != "update" || upd.RecordID != company || upd.Module != 1 ||
			*upd.UserID != w.member.id || upd.UserName != "member of acme" || upd.TokenID == nil ||
			fmt.Sprint(upd.Changes["note"]) != "[ Call back]" || len(upd.Date) != 19 {
			t.Errorf("update event %+v", upd)
		}
		if all[0].Entity != "company" || all[0].Action != "insert" || all[0].Changes["name"] != "Contoso" {
			t.Errorf("first event %+v", all[0])
		}
	})

	t.Run("OK the cursor goes on where it stopped; an empty page keeps it", func(t *testing.T) {
		page := e.feed(t, w.admin.token, url.Values{"records_onpage": {"1"}})
		if len(page.Events) != 1 || !page.More {
			t.Fatalf("first page %+v", page)
		}
		rest, last := e.feedAll(t, w.admin.token, page.Cursor, 500, nil)
		if got := append(eventIDs(page.Events), eventIDs(rest)...); !slices.Equal(got, e.journalIDsByPosition(t, w.accountID)) {
			t.Errorf("events %v", got)
		}
		end := e.feed(t, w.admin.token, url.Values{"cursor": {last}})
		if len(end.Events) != 0 || end.More || end.Cursor != last {
			t.Errorf("caught up: %+v, want no events and cursor %s", end, last)
		}
		expectOK(t, e.post(t, w.admin.token, "/company/update", map[string]any{"id": company, "note": "Later"}))
		next := e.feed(t, w.admin.token, url.Values{"cursor": {last}})
		if len(next.Events) != 1 || next.Events[0].Changes["note"] == nil {
			t.Errorf("after a new change: %+v", next)
		}
	})

	t.Run("OK filters by module and action", func(t *testing.T) {
		tasks, _ := e.feedAll(t, w.admin.token, "", 500, url.Values{"module": {"2"}})
		if len(tasks) != 1 || tasks[0].Entity != "task" {
			t.Errorf("module 2: %+v", tasks)
		}
		updates, _ := e.feedAll(t, w.admin.token, "", 500, url.Values{"action": {"update,delete"}, "module": {"1,2"}})
		if len(updates) != 2 || updates[0].Action != "update" {
			t.Errorf("updates: %+v", updates)
		}
	})

	t.Run("access levels: the journal's rule", func(t *testing.T) {
		// admin: everything; head: the department's users (member, peer); members: their own.
		count := func(u user) int {
			all, _ := e.feedAll(t, u.token, "", 500, nil)
			for _, ev := range all {
				if ev.UserID == nil {
					t.Errorf("event without user shown to %d", u.id)
				}
			}
			return len(all)
		}
		total := len(e.journalIDsByPosition(t, w.accountID))
		for _, c := range byRole(w, total, 2, 2, 0, 0) {
			t.Run(c.name, func(t *testing.T) {
				if got := count(c.u); got != c.want {
					t.Errorf("%d events, want %d", got, c.want)
				}
			})
		}
	})

	t.Run("another account sees only its own", func(t *testing.T) {
		all, _ := e.feedAll(t, beta.admin.token, "", 500, nil)
		if got := eventIDs(all); !slices.Equal(got, e.journalIDsByPosition(t, beta.accountID)) || len(got) == 0 {
			t.Errorf("beta events %v", got)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		acme := e.feed(t, w.admin.token, url.Values{"records_onpage": {"1"}}).Cursor
		for name, c := range map[string]struct{ q, msg string }{
			"cursor of another account": {"cursor=" + acme, "cursor: not a cursor"},
			"made-up cursor":            {"cursor=abc", "cursor: not a cursor"},
			"unknown module":            {"module=3", "module: 3 is not a module"},
			"unknown action":            {"action=explode", `action: "explode"`},
			"too many per page":         {"records_onpage=501", "records_onpage"},
			"module not a list":         {"module=1-2", "module"},
		} {
			t.Run(name, func(t *testing.T) {
				expectError(t, e.get(t, beta.admin.token, "/event/list?"+c.q), "400", c.msg, "")
			})
		}
	})
}

// TestEventFeedConcurrentWriters pages through the feed while many writers
// commit in any order: every event is seen exactly once, in feed order, and
// the feed order is the order of the positions.
func TestEventFeedConcurrentWriters(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	company, _ := newCompany(t, e, w, "Contoso", w.admin)
	_, start := e.feedAll(t, w.admin.token, "", 500, nil)

	const writers, each = 8, 12
	var wg sync.WaitGroup
	done := make(chan struct{})
	for i := range writers {
		wg.Go(func() {
			for j := range each {
				if j%2 == 0 {
					e.post(t, w.admin.token, "/task/insert", map[string]any{"company_id": company, "note": fmt.Sprintf("w%d-%d", i, j), "type_id": w.dirs[35][0]})
				} else {
					e.post(t, w.admin.token, "/company/email/insert", map[string]any{"company_id": company, "email": fmt.Sprintf("w%d-%d@example.com", i, j)})
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()

	var seen []feedEvent
	cursor := start
	for finished := false; ; {
		select {
		case <-done:
			finished = true
		default:
		}
		page := e.feed(t, w.admin.token, url.Values{"cursor": {cursor}, "records_onpage": {"7"}})
		seen = append(seen, page.Events...)
		cursor = page.Cursor
		if finished && !page.More {
			break
		}
	}
	ids := eventIDs(seen)
	all := e.journalIDsByPosition(t, w.accountID)
	want := all[len(all)-writers*each:]
	if !slices.Equal(ids, want) {
		t.Fatalf("seen %d events %v\nwant %d in position order %v", len(ids), ids, len(want), want)
	}
	var gaps int
	if err := e.db.Get(&gaps, `SELECT count(*) FROM (SELECT position - lag(position) OVER (ORDER BY position) AS d
		FROM journal WHERE account_id = $1) x WHERE d <> 1`, w.accountID); err != nil || gaps != 0 {
		t.Errorf("positions not dense: %d gaps (%v)", gaps, err)
	}
}

// TestEventFeedCommitOrder holds a writer between taking its position and
// committing: the next writer waits for it, and the feed shows neither until
// the first commits, then both in commit order.
func TestEventFeedCommitOrder(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	company, _ := newCompany(t, e, w, "Contoso", w.admin)
	_, cursor := e.feedAll(t, w.admin.token, "", 500, nil)

	ctx := context.Background()
	slow, err := e.db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback()
	// A writer as writeJournal writes: the position from the counter, then its row.
	var pos, slowID int64
	if err := slow.Get(&pos, `INSERT INTO event_counters AS ec (account_id, last) VALUES ($1, 1)
		ON CONFLICT (account_id) DO UPDATE SET last = ec.last + 1 RETURNING last`, w.accountID); err != nil {
		t.Fatal(err)
	}
	if err := slow.Get(&slowID, `INSERT INTO journal (account_id, user_id, module, entity, record_id, action, position)
		VALUES ($1, $2, 1, 'company', $3, 'update', $4) RETURNING id`, w.accountID, w.admin.id, company, pos); err != nil {
		t.Fatal(err)
	}

	fast := make(chan reply, 1)
	go func() {
		fast <- e.post(t, w.admin.token, "/company/update", map[string]any{"id": company, "note": "fast"})
	}()
	select {
	case r := <-fast:
		t.Fatalf("the second writer committed before the first: %s", r.Raw)
	case <-time.After(300 * time.Millisecond):
	}
	if page := e.feed(t, w.admin.token, url.Values{"cursor": {cursor}}); len(page.Events) != 0 || page.Cursor != cursor {
		t.Fatalf("the feed shows uncommitted work or moves past it: %+v", page)
	}
	if err := slow.Commit(); err != nil {
		t.Fatal(err)
	}
	expectOK(t, <-fast)
	page := e.feed(t, w.admin.token, url.Values{"cursor": {cursor}})
	if len(page.Events) != 2 || page.Events[0].ID != slowID || page.Events[1].Changes["note"] == nil {
		t.Fatalf("after both commits: %+v", page)
	}
}
