package impl_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
)

// TestCompanyInsertAtOnce: a counterparty with its own e-mails and phones (no
// contact persons, no requisites) is written by one statement after the
// e-mails' locks; the rows, the journal with its positions in the event feed
// and the duplicate check are those of the general path.
func TestCompanyInsertAtOnce(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	body := func(name string, emails ...string) map[string]any {
		var list []any
		for _, m := range emails {
			list = append(list, map[string]any{"email": m})
		}
		return map[string]any{"name": name, "type_id": w.dirs[9][0], "user_id": w.member.id, "city": "Riga",
			"Emails": list,
			"Phones": []any{map[string]any{"phone": "+371 2000 0001", "descr": "mobile"}, map[string]any{"phone": "+372 5000 0002"}}}
	}
	counter := func() int {
		return e.count(t, `SELECT coalesce((SELECT last FROM event_counters WHERE account_id = $1), 0)`, w.accountID)
	}

	t.Run("rows and journal", func(t *testing.T) {
		before := counter()
		r := e.post(t, w.member.token, "/company/insert?check_duplicates=true", body("Fast", "One@fast.example", "two@fast.example"))
		v := expectOK(t, r)
		id, _ := strconv.ParseInt(v, 10, 64)
		var emails, phones []string
		if err := e.db.Select(&emails, `SELECT email FROM emails WHERE account_id = $1 AND company_id = $2 AND contact_id IS NULL ORDER BY id`, w.accountID, id); err != nil {
			t.Fatal(err)
		}
		if err := e.db.Select(&phones, `SELECT phone || '/' || descr || '/' || phone_digits FROM phones WHERE account_id = $1 AND company_id = $2 ORDER BY id`, w.accountID, id); err != nil {
			t.Fatal(err)
		}
		if want := []string{"One@fast.example", "two@fast.example"}; !reflect.DeepEqual(emails, want) {
			t.Errorf("e-mails %v, want %v", emails, want)
		}
		if want := []string{"+371 2000 0001/mobile/37120000001", "+372 5000 0002//37250000002"}; !reflect.DeepEqual(phones, want) {
			t.Errorf("phones %v, want %v", phones, want)
		}
		var journal []struct {
			Entity   string `db:"entity"`
			Action   string `db:"action"`
			Module   int    `db:"module"`
			Record   int64  `db:"record_id"`
			Position int    `db:"position"`
			Changes  string `db:"changes"`
			User     int64  `db:"user_id"`
			Token    bool   `db:"token"`
		}
		if err := e.db.Select(&journal, `SELECT entity, action, module, record_id, position, changes::text AS changes, user_id, token_id IS NOT NULL AS token
			FROM journal WHERE account_id = $1 AND position > $2 ORDER BY position`, w.accountID, before); err != nil {
			t.Fatal(err)
		}
		if len(journal) != 5 {
			t.Fatalf("%d journal rows, want 5: %+v", len(journal), journal)
		}
		var ids []int64
		if err := e.db.Select(&ids, `SELECT id FROM (SELECT id, 1 AS k FROM emails WHERE account_id = $1 AND company_id = $2
			UNION ALL SELECT id, 2 FROM phones WHERE account_id = $1 AND company_id = $2) x ORDER BY k, id`, w.accountID, id); err != nil {
			t.Fatal(err)
		}
		wantChanges := []map[string]any{
			{"name": "Fast", "person": 1, "city": "Riga", "type_id": w.dirs[9][0], "user_id": w.member.id},
			{"company_id": id, "contact_id": nil, "email": "One@fast.example"},
			{"company_id": id, "contact_id": nil, "email": "two@fast.example"},
			{"company_id": id, "contact_id": nil, "phone": "+371 2000 0001", "descr": "mobile"},
			{"company_id": id, "contact_id": nil, "phone": "+372 5000 0002", "descr": ""},
		}
		for i, j := range journal {
			entity, record := "company", id
			switch {
			case i >= 3:
				entity, record = "phone", ids[i-1]
			case i >= 1:
				entity, record = "email", ids[i-1]
			}
			if j.Entity != entity || j.Record != record || j.Action != "insert" || j.Module != 1 || j.Position != before+i+1 ||
				j.User != w.member.id || !j.Token {
				t.Errorf("journal row %d: %+v, want %s %d at position %d", i, j, entity, record, before+i+1)
			}
			var got, want any
			_ = json.Unmarshal([]byte(j.Changes), &got)
			b, _ := json.Marshal(wantChanges[i])
			_ = json.Unmarshal(b, &want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("journal row %d changes %s, want %s", i, j.Changes, b)
			}
		}
		if got := counter(); got != before+5 {
			t.Errorf("event counter %d, want %d", got, before+5)
		}
	})

	t.Run("duplicate writes nothing", func(t *testing.T) {
		first := insertCompany(t, e, w.member.token, body("Original", "dup@fast.example"))
		before := e.count(t, `SELECT (SELECT count(*) FROM companies WHERE account_id = $1) + (SELECT count(*) FROM emails WHERE account_id = $1) + (SELECT count(*) FROM phones WHERE account_id = $1) + (SELECT count(*) FROM journal WHERE account_id = $1)`, w.accountID)
		cnt := counter()
		r := e.post(t, w.other.token, "/company/insert?check_duplicates=true", body("Copy", "new@fast.example", "DUP@fast.example"))
		// The other member does not see the original: no name in the message.
		expectError(t, r, "409", fmt.Sprintf("duplicate: the e-mail dup@fast.example already belongs to counterparty %d", first), strconv.FormatInt(first, 10))
		if r.errorText() != fmt.Sprintf("duplicate: the e-mail dup@fast.example already belongs to counterparty %d", first) {
			t.Errorf("error %q names an invisible counterparty", r.errorText())
		}
		r = e.post(t, w.admin.token, "/company/insert?check_duplicates=true", body("Copy", "dup@FAST.example"))
		expectError(t, r, "409", fmt.Sprintf("counterparty %d \"Original\"", first), strconv.FormatInt(first, 10))
		after := e.count(t, `SELECT (SELECT count(*) FROM companies WHERE account_id = $1) + (SELECT count(*) FROM emails WHERE account_id = $1) + (SELECT count(*) FROM phones WHERE account_id = $1) + (SELECT count(*) FROM journal WHERE account_id = $1)`, w.accountID)
		if after != before || counter() != cnt {
			t.Fatalf("a refused duplicate wrote rows (%d -> %d) or moved the counter", before, after)
		}
		// Without the check a duplicate is allowed.
		insertCompany(t, e, w.member.token, body("Allowed copy", "dup@fast.example"))
	})

	t.Run("20 concurrent inserts of one e-mail create one counterparty", func(t *testing.T) {
		const n = 20
		var wg sync.WaitGroup
		replies := make([]reply, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				replies[i] = e.post(t, w.member.token, "/company/insert?check_duplicates=true", body(fmt.Sprintf("Racer %d", i), "Race@Fast.example"))
			}()
		}
		wg.Wait()
		var created []string
		for _, r := range replies {
			if r.Status == "success" {
				created = append(created, r.Value)
			}
		}
		if len(created) != 1 {
			t.Fatalf("%d inserts succeeded, want 1", len(created))
		}
		for _, r := range replies {
			if r.Status != "success" {
				expectError(t, r, "409", "the e-mail Race@Fast.example already belongs to counterparty "+created[0], created[0])
			}
		}
		if got := e.count(t, `SELECT count(*) FROM companies WHERE account_id = $1 AND name LIKE 'Racer %'`, w.accountID); got != 1 {
			t.Fatalf("%d counterparties stored, want 1", got)
		}
	})
}
