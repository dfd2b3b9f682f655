package impl_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestTaskInsert(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	company, contact := newCompany(t, e, w, "Contoso", w.member)
	deal := newDeal(t, e, w, company, w.member, nil)
	otherCompany, otherContact := newCompany(t, e, w, "Fabrikam", w.member)
	otherDeal := newDeal(t, e, w, otherCompany, w.member, nil)
	peerDeal := newDeal(t, e, w, company, w.peer, nil)

	type stored struct {
		CompanyID, TypeID, UserID, AssignerID int64
		DealID, ContactID                     *int64
		Note, Tags, DateStart                 string
		DateFinish                            *string
		StatusID                              int
		Done, IsHot                           bool
		Reminder                              *int
	}
	read := func(t *testing.T, id int64) stored {
		t.Helper()
		var s stored
		err := e.db.QueryRow(`SELECT company_id, type_id, user_id, assigner_id, deal_id, contact_id, note, array_to_string(tags, '|'),
				to_char(date_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'), to_char(date_finish AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'),
				status_id, done_at IS NOT NULL, is_hot, reminder_minutes
			FROM tasks WHERE account_id = $1 AND id = $2`, w.accountID, id).
			Scan(&s.CompanyID, &s.TypeID, &s.UserID, &s.AssignerID, &s.DealID, &s.ContactID, &s.Note, &s.Tags, &s.DateStart,
				&s.DateFinish, &s.StatusID, &s.Done, &s.IsHot, &s.Reminder)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	t.Run("OK minimal: defaults", func(t *testing.T) {
		before := time.Now().UTC().Add(-time.Minute).Format("2006-01-02 15:04")
		r := e.post(t, w.member.token, "/task/insert", map[string]any{"company_id": company, "note": "Call back", "type_id": w.dirs[35][0]})
		id := parseID(t, expectOK(t, r))
		got := read(t, id)
		after := time.Now().UTC().Add(time.Minute).Format("2006-01-02 15:04")
		if got.DateStart < before || got.DateStart > after {
			t.Errorf("date_start %s, want now (between %s and %s)", got.DateStart, before, after)
		}
		want := stored{CompanyID: company, TypeID: w.dirs[35][0], UserID: w.member.id, AssignerID: w.member.id,
			Note: "Call back", DateStart: got.DateStart, StatusID: 1}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("stored %+v, want %+v", got, want)
		}
		if j := e.journalRows(t, 2, "task", id); !reflect.DeepEqual(j, []string{"insert"}) {
			t.Errorf("journal %v", j)
		}
		changes := e.journalChanges(t, 2, "task", id)
		if changes["note"] != "Call back" || changes["assigner_id"] == nil || changes["date_start"] == nil {
			t.Errorf("journal changes %v", changes)
		}
	})

	t.Run("OK with every field, dates in the owner's time zone", func(t *testing.T) {
		r := e.post(t, w.member.token, "/task/insert", map[string]any{
			"company_id": company, "note": "Meet", "type_id": w.dirs[35][1], "user_id": w.peer.id, "status_id": 1,
			"deal_id": deal, "contact_id": contact, "date_start": "2026-11-20 10:00", "date_finish": "2026-07-01 09:30",
			"is_hot": 1, "reminder_minutes": 15, "tags": "offer, vip,offer"})
		expectError(t, r, "400", "date_finish: must not be before date_start", "")

		r = e.post(t, w.member.token, "/task/insert", map[string]any{
			"company_id": company, "note": "Meet", "type_id": w.dirs[35][1], "user_id": w.peer.id, "status_id": 1,
			"deal_id": deal, "contact_id": contact, "date_start": "2026-11-20 10:00", "date_finish": "2026-11-20 11:30",
			"is_hot": 1, "reminder_minutes": 15, "tags": "offer, vip,offer"})
		id := parseID(t, expectOK(t, r))
		finish := "2026-11-20 09:30" // Europe/Riga is UTC+2 in November
		want := stored{CompanyID: company, TypeID: w.dirs[35][1], UserID: w.peer.id, AssignerID: w.member.id,
			DealID: &deal, ContactID: &contact, Note: "Meet", Tags: "offer|vip", DateStart: "2026-11-20 08:00",
			DateFinish: &finish, StatusID: 1, IsHot: true, Reminder: ptr(15)}
		if got := read(t, id); !reflect.DeepEqual(got, want) {
			t.Errorf("stored %+v, want %+v", got, want)
		}
	})

	t.Run("OK date-times as the task list returns them", func(t *testing.T) {
		id := parseID(t, expectOK(t, e.post(t, w.member.token, "/task/insert", map[string]any{
			"company_id": company, "note": "Round trip", "type_id": w.dirs[35][0],
			"date_start": "2026-11-20 10:00:00", "date_finish": "2026-11-20 11:30:45"})))
		var start, finish string
		if err := e.db.QueryRow(`SELECT to_char(date_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),
				to_char(date_finish AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') FROM tasks WHERE account_id = $1 AND id = $2`,
			w.accountID, id).Scan(&start, &finish); err != nil {
			t.Fatal(err)
		}
		if start != "2026-11-20 08:00:00" || finish != "2026-11-20 09:30:45" {
			t.Errorf("stored %s and %s UTC, want 2026-11-20 08:00:00 and 09:30:45 (Riga is UTC+2)", start, finish)
		}
		// What the list returns goes back in unchanged.
		var listed []map[string]any
		for _, task := range decode[[]map[string]any](t, expectQuick(t, e.get(t, w.member.token, fmt.Sprintf("/task/list?company_id=%d", company)))) {
			if task["id"] == float64(id) {
				listed = append(listed, task)
			}
		}
		if len(listed) != 1 || listed[0]["date_start"] != "2026-11-20 10:00:00" || listed[0]["date_finish"] != "2026-11-20 11:30:45" {
			t.Fatalf("listed %v", listed)
		}
		again := parseID(t, expectOK(t, e.post(t, w.member.token, "/task/insert", map[string]any{
			"company_id": company, "note": "Copy", "type_id": w.dirs[35][0],
			"date_start": listed[0]["date_start"], "date_finish": listed[0]["date_finish"]})))
		if n := e.count(t, `SELECT count(*) FROM tasks a JOIN tasks b ON b.account_id = a.account_id AND b.id = $2
			WHERE a.account_id = $3 AND a.id = $1 AND a.date_start = b.date_start AND a.date_finish = b.date_finish`, id, again, w.accountID); n != 1 {
			t.Error("the copy's date-times differ from the listed ones")
		}
	})

	t.Run("summer time and the user's own time zone", func(t *testing.T) {
		if _, err := e.db.Exec(`UPDATE users SET time_zone = 'America/New_York' WHERE id = $1`, w.other.id); err != nil {
			t.Fatal(err)
		}
		c, _ := newCompany(t, e, w, "Northwind", w.other)
		id := parseID(t, expectOK(t, e.post(t, w.other.token, "/task/insert", map[string]any{
			"company_id": c, "note": "x", "type_id": w.dirs[35][0], "date_start": "2026-07-01 09:00"})))
		if got := read(t, id).DateStart; got != "2026-07-01 13:00" {
			t.Errorf("date_start %s UTC, want 2026-07-01 13:00 (09:00 in New York in summer)", got)
		}
	})

	t.Run("inserted as done gets done_at", func(t *testing.T) {
		id := parseID(t, expectOK(t, e.post(t, w.member.token, "/task/insert", map[string]any{
			"company_id": company, "note": "Done already", "type_id": w.dirs[35][0], "status_id": 2})))
		if got := read(t, id); got.StatusID != 2 || !got.Done {
			t.Errorf("status %d done %t, want 2 with done_at", got.StatusID, got.Done)
		}
		if n := e.count(t, `SELECT count(*) FROM tasks WHERE id = $1 AND done_at > now() - interval '1 minute'`, id); n != 1 {
			t.Error("done_at is not now")
		}
	})

	t.Run("access levels", func(t *testing.T) {
		for _, who := range w.roles() {
			t.Run(who.name, func(t *testing.T) {
				before := e.rowCounts(t, w.accountID, "tasks", "journal")
				r := e.post(t, who.u.token, "/task/insert", map[string]any{"company_id": company, "note": "x", "type_id": w.dirs[35][0]})
				if who.visible {
					parseID(t, expectOK(t, r))
					return
				}
				expectError(t, r, "404", fmt.Sprintf("counterparty %d not found", company), "")
				if after := e.rowCounts(t, w.accountID, "tasks", "journal"); after != before {
					t.Errorf("a refused insert wrote %d rows", after-before)
				}
			})
		}
		t.Run("another account's admin", func(t *testing.T) {
			b := e.newWorld(t, "beta")
			r := e.post(t, b.admin.token, "/task/insert", map[string]any{"company_id": company, "note": "x", "type_id": b.dirs[35][0]})
			expectError(t, r, "404", fmt.Sprintf("counterparty %d not found", company), "")
		})
		t.Run("a deal the caller may not see", func(t *testing.T) {
			r := e.post(t, w.member.token, "/task/insert", map[string]any{"company_id": company, "note": "x", "type_id": w.dirs[35][0],
				"deal_id": peerDeal})
			expectError(t, r, "400", "deal_id: no such deal of this counterparty", "")
			// the head sees the peer's deal
			parseID(t, expectOK(t, e.post(t, w.head.token, "/task/insert", map[string]any{"company_id": company, "note": "x",
				"type_id": w.dirs[35][0], "deal_id": peerDeal})))
		})
	})

	beta := e.newWorld(t, "beta2")
	betaCompany, _ := newCompany(t, e, beta, "Beta Co", beta.member)
	betaDeal := newDeal(t, e, beta, betaCompany, beta.member, nil)
	body := func(change func(map[string]any)) map[string]any {
		b := map[string]any{"company_id": company, "note": "Call", "type_id": w.dirs[35][0]}
		change(b)
		return b
	}
	for _, tc := range []struct {
		name string
		body any
		code string
		want string
	}{
		{"missing company_id", body(func(b map[string]any) { delete(b, "company_id") }), "400", `property "company_id" is missing`},
		{"missing note", body(func(b map[string]any) { delete(b, "note") }), "400", `property "note" is missing`},
		{"missing type_id", body(func(b map[string]any) { delete(b, "type_id") }), "400", `property "type_id" is missing`},
		{"empty note", body(func(b map[string]any) { b["note"] = "" }), "400", `field "note"`},
		{"note too long", body(func(b map[string]any) { b["note"] = strings.Repeat("x", 10001) }), "400", `field "note"`},
		{"company_id a string", body(func(b map[string]any) { b["company_id"] = fmt.Sprint(company) }), "400", `field "company_id"`},
		{"unknown company", body(func(b map[string]any) { b["company_id"] = 9223372036854775807 }), "404", "counterparty 9223372036854775807 not found"},
		{"another account's company", body(func(b map[string]any) { b["company_id"] = betaCompany }), "404", "not found"},
		{"unknown type", body(func(b map[string]any) { b["type_id"] = 999999999 }), "400", "type_id: no such value in directory 35"},
		{"deal type as task kind", body(func(b map[string]any) { b["type_id"] = w.dirs[40][0] }), "400", "type_id: no such value in directory 35"},
		{"another account's kind", body(func(b map[string]any) { b["type_id"] = beta.dirs[35][0] }), "400", "type_id: no such value in directory 35"},
		{"unknown user", body(func(b map[string]any) { b["user_id"] = 999999999 }), "400", "user_id: no such user"},
		{"another account's user", body(func(b map[string]any) { b["user_id"] = beta.member.id }), "400", "user_id: no such user"},
		{"deal of another counterparty", body(func(b map[string]any) { b["deal_id"] = otherDeal }), "400", "deal_id: no such deal of this counterparty"},
		{"another account's deal", body(func(b map[string]any) { b["deal_id"] = betaDeal }), "400", "deal_id: no such deal of this counterparty"},
		{"contact of another counterparty", body(func(b map[string]any) { b["contact_id"] = otherContact }), "400", "contact_id: no such contact person of this counterparty"},
		{"status 3", body(func(b map[string]any) { b["status_id"] = 3 }), "400", `field "status_id"`},
		{"is_hot 2", body(func(b map[string]any) { b["is_hot"] = 2 }), "400", `field "is_hot"`},
		{"negative reminder", body(func(b map[string]any) { b["reminder_minutes"] = -1 }), "400", `field "reminder_minutes"`},
		{"date in another format", body(func(b map[string]any) { b["date_start"] = "2026-11-20T10:00" }), "400",
			`request body: field "date_start": not a date and time: YYYY-MM-DD HH:MM or YYYY-MM-DD HH:MM:SS`},
		{"date with one digit of seconds", body(func(b map[string]any) { b["date_finish"] = "2026-11-20 10:00:0" }), "400",
			`request body: field "date_finish": not a date and time: YYYY-MM-DD HH:MM or YYYY-MM-DD HH:MM:SS`},
		{"seconds that do not exist", body(func(b map[string]any) { b["date_start"] = "2026-11-20 10:00:60" }), "400",
			"date_start: not a valid date and time (YYYY-MM-DD HH:MM or YYYY-MM-DD HH:MM:SS)"},
		{"date that does not exist", body(func(b map[string]any) { b["date_start"] = "2026-02-30 10:00" }), "400", "date_start: not a valid date and time"},
		{"hour 24", body(func(b map[string]any) { b["date_finish"] = "2026-11-20 24:00" }), "400", "date_finish: not a valid date and time"},
		{"year 0", body(func(b map[string]any) { b["date_start"] = "0000-01-01 10:00" }), "400", "a date is out of range"},
		{"tags too long", body(func(b map[string]any) { b["tags"] = strings.Repeat("t", 1001) }), "400", `field "tags"`},
		{"unknown field", body(func(b map[string]any) { b["result"] = "done" }), "400", `property "result" is unsupported`},
		{"null body", "null", "400", "request body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.rowCounts(t, w.accountID, "tasks", "journal")
			expectError(t, e.post(t, w.member.token, "/task/insert", tc.body), tc.code, tc.want, "")
			if after := e.rowCounts(t, w.accountID, "tasks", "journal"); after != before {
				t.Errorf("a refused insert wrote %d rows", after-before)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestTaskList(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	company, contact := newCompany(t, e, w, "Contoso", w.admin)
	deal := newDeal(t, e, w, company, w.admin, nil)
	other, _ := newCompany(t, e, w, "Fabrikam", w.admin)

	insert := func(token string, b map[string]any) int64 {
		t.Helper()
		return parseID(t, expectOK(t, e.post(t, token, "/task/insert", b)))
	}
	// As the admin assigns: assignee decides visibility for members.
	full := insert(w.admin.token, map[string]any{"company_id": company, "note": "Meet", "type_id": w.dirs[35][1],
		"user_id": w.member.id, "deal_id": deal, "contact_id": contact, "date_start": "2026-11-20 10:00",
		"date_finish": "2026-11-20 11:30", "is_hot": 1, "tags": "offer,vip"})
	early := insert(w.admin.token, map[string]any{"company_id": company, "note": "Early", "type_id": w.dirs[35][0],
		"user_id": w.other.id, "date_start": "2026-11-01 08:00", "status_id": 2})
	sameStart := insert(w.admin.token, map[string]any{"company_id": company, "note": "Same start", "type_id": w.dirs[35][0],
		"date_start": "2026-11-01 08:00"}) // assignee and assigner: the admin
	// The peer assigns a task to the admin: the peer sees it as its assigner.
	byPeer := insert(w.admin.token, map[string]any{"company_id": company, "note": "placeholder", "type_id": w.dirs[35][0],
		"date_start": "2026-10-01 08:00"})
	if _, err := e.db.Exec(`UPDATE tasks SET assigner_id = $1, note = 'By the peer' WHERE id = $2`, w.peer.id, byPeer); err != nil {
		t.Fatal(err)
	}
	insert(w.admin.token, map[string]any{"company_id": other, "note": "Elsewhere", "type_id": w.dirs[35][0]})

	ids := func(t *testing.T, r reply) []int64 {
		t.Helper()
		list := decode[[]map[string]any](t, r.Value)
		if r.Status != "success" || r.Rows != len(list) || r.Pages != min(1, len(list)) || r.Page != min(1, len(list)) {
			t.Fatalf("want a quick list, got %s", r.Raw)
		}
		out := []int64{}
		for _, x := range list {
			out = append(out, int64(x["id"].(float64)))
		}
		return out
	}
	list := func(t *testing.T, token, query string) []int64 {
		t.Helper()
		return ids(t, e.get(t, token, "/task/list?"+query))
	}

	t.Run("OK: every column, latest start first", func(t *testing.T) {
		r := e.get(t, w.admin.token, fmt.Sprintf("/task/list?company_id=%d", company))
		got := decode[[]map[string]any](t, r.Value)
		if want := []int64{full, sameStart, early, byPeer}; !reflect.DeepEqual(ids(t, r), want) {
			t.Fatalf("order %v, want %v", ids(t, r), want)
		}
		want := map[string]any{
			"id": float64(full), "note": "Meet", "status_id": float64(1), "status": "in work",
			"type_id": float64(w.dirs[35][1]), "type": "Meeting", "date_start": "2026-11-20 10:00:00",
			"date_finish": "2026-11-20 11:30:00", "result": "", "user_id": float64(w.member.id), "user_name": "member of acme",
			"assigner_id": float64(w.admin.id), "company_id": float64(company), "company_name": "Contoso",
			"deal_id": float64(deal), "contact_id": float64(contact), "is_hot": float64(1), "tags": "offer,vip",
		}
		if !reflect.DeepEqual(got[0], want) {
			t.Errorf("task\n got %v\nwant %v", got[0], want)
		}
		if got[2]["status"] != "done" || got[2]["status_id"] != float64(2) || got[2]["date_finish"] != nil ||
			got[2]["deal_id"] != nil || got[2]["is_hot"] != float64(0) || got[2]["tags"] != "" {
			t.Errorf("done task without deal %v", got[2])
		}
	})
	t.Run("in the caller's time zone", func(t *testing.T) {
		if _, err := e.db.Exec(`UPDATE users SET time_zone = 'UTC' WHERE id = $1`, w.head.id); err != nil {
			t.Fatal(err)
		}
		got := decode[[]map[string]any](t, e.get(t, w.head.token, fmt.Sprintf("/task/list?company_id=%d", company)).Value)
		if got[0]["date_start"] != "2026-11-20 08:00:00" {
			t.Errorf("date_start %v, want 08:00 UTC", got[0]["date_start"])
		}
	})
	t.Run("of one deal", func(t *testing.T) {
		if got := list(t, w.admin.token, fmt.Sprintf("company_id=%d&deal_id=%d", company, deal)); !reflect.DeepEqual(got, []int64{full}) {
			t.Errorf("tasks of the deal %v", got)
		}
		if got := list(t, w.admin.token, fmt.Sprintf("company_id=%d&deal_id=%d", other, deal)); len(got) != 0 {
			t.Errorf("tasks of the deal at another counterparty %v", got)
		}
	})
	t.Run("access levels", func(t *testing.T) {
		// The head sees tasks whose assignee or assigner is in the department; the
		// member is the assignee of full, the peer the assigner of byPeer, and the
		// member of another department the assignee of early.
		for _, tc := range byRole(w, []int64{full, sameStart, early, byPeer}, []int64{full, byPeer}, []int64{full},
			[]int64{byPeer}, []int64{early}) {
			t.Run(tc.name, func(t *testing.T) {
				if got := list(t, tc.u.token, fmt.Sprintf("company_id=%d", company)); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			})
		}
		t.Run("another account's admin", func(t *testing.T) {
			if got := list(t, e.newWorld(t, "beta").admin.token, fmt.Sprintf("company_id=%d", company)); len(got) != 0 {
				t.Errorf("another account sees %v", got)
			}
		})
	})
	t.Run("unknown counterparty: empty list", func(t *testing.T) {
		r := e.get(t, w.admin.token, "/task/list?company_id=9223372036854775807")
		if r.Status != "success" || r.Value != "[]" || r.Rows != 0 || r.Pages != 0 || r.Page != 0 {
			t.Errorf("got %s", r.Raw)
		}
	})
	t.Run("deleted counterparty: empty list", func(t *testing.T) {
		if _, err := e.db.Exec(`UPDATE companies SET deleted_at = now() WHERE id = $1`, other); err != nil {
			t.Fatal(err)
		}
		if got := list(t, w.admin.token, fmt.Sprintf("company_id=%d", other)); len(got) != 0 {
			t.Errorf("tasks of a deleted counterparty %v", got)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		expectError(t, e.get(t, w.admin.token, "/task/list"), "400", `query parameter "company_id"`, "")
		expectError(t, e.get(t, w.admin.token, "/task/list?deal_id=1"), "400", `query parameter "company_id"`, "")
		expectError(t, e.get(t, w.admin.token, "/task/list?company_id=abc"), "400", `query parameter "company_id"`, "")
		expectError(t, e.get(t, w.admin.token, "/task/list?company_id=0"), "400", `query parameter "company_id"`, "")
		expectError(t, e.get(t, w.admin.token, fmt.Sprintf("/task/list?company_id=%d&deal_id=x", company)), "400", `query parameter "deal_id"`, "")
	})
}
