package impl_test

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/crmservice/crm/impl"
)

// listedUser is an element of GET /user/list.
type listedUser struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	Role         string `json:"role"`
	DepartmentID *int64 `json:"department_id"`
	Department   string `json:"department"`
	Active       bool   `json:"active"`
}

func TestUserMe(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	beta := e.newWorld(t, "beta")
	if _, err := e.db.Exec(`UPDATE users SET time_zone = 'America/New_York', kpi_users_report = true WHERE id = $1`, w.member.id); err != nil {
		t.Fatal(err)
	}
	me := func(id int64, name, role string, dept *int64, deptName, tz string, kpiUsers bool) map[string]any {
		m := map[string]any{"id": float64(id), "name": name, "role": role, "department_id": nil, "department": deptName,
			"time_zone": tz, "kpi_users_report": kpiUsers, "kpi_departments_report": false, "base_currency": "EUR"}
		if dept != nil {
			m["department_id"] = float64(*dept)
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		token string
		want  map[string]any
	}{
		{"admin, in no department", w.admin.token, me(w.admin.id, "admin of acme", "admin", nil, "", "Europe/Riga", false)},
		{"head", w.head.token, me(w.head.id, "head of acme", "head", &w.sales, "Sales", "Europe/Riga", false)},
		{"member with their own time zone and a KPI right", w.member.token,
			me(w.member.id, "member of acme", "member", &w.sales, "Sales", "America/New_York", true)},
		{"member of another department", w.other.token, me(w.other.id, "other of acme", "member", &w.support, "Support", "Europe/Riga", false)},
		{"another account's admin", beta.admin.token, me(beta.admin.id, "admin of beta", "admin", nil, "", "Europe/Riga", false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decode[map[string]any](t, expectOK(t, e.get(t, tc.token, "/user/me")))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
	t.Run("no token", func(t *testing.T) {
		r := e.get(t, "", "/user/me")
		expectErrorStatus(t, r, http.StatusUnauthorized, "401", "", "")
	})
}

func TestUserList(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	beta := e.newWorld(t, "beta")
	if err := impl.SetUserActive(t.Context(), e.db, w.other.id, false); err != nil {
		t.Fatal(err)
	}
	admin := listedUser{w.admin.id, "admin of acme", "admin", nil, "", true}
	head := listedUser{w.head.id, "head of acme", "head", &w.sales, "Sales", true}
	member := listedUser{w.member.id, "member of acme", "member", &w.sales, "Sales", true}
	other := listedUser{w.other.id, "other of acme", "member", &w.support, "Support", false}
	peer := listedUser{w.peer.id, "peer of acme", "member", &w.sales, "Sales", true}
	for _, tc := range []struct {
		name  string
		token string
		want  []listedUser
	}{
		{"admin: every user of the account, deactivated ones too", w.admin.token, []listedUser{admin, head, member, other, peer}},
		{"head: the department and themselves", w.head.token, []listedUser{head, member, peer}},
		{"member: themselves", w.member.token, []listedUser{member}},
		{"peer member: themselves", w.peer.token, []listedUser{peer}},
		{"another account's admin: only their own account", beta.admin.token, []listedUser{
			{beta.admin.id, "admin of beta", "admin", nil, "", true}, {beta.head.id, "head of beta", "head", &beta.sales, "Sales", true},
			{beta.member.id, "member of beta", "member", &beta.sales, "Sales", true},
			{beta.other.id, "other of beta", "member", &beta.support, "Support", true},
			{beta.peer.id, "peer of beta", "member", &beta.sales, "Sales", true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decode[[]listedUser](t, expectQuick(t, e.get(t, tc.token, "/user/list")))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// listedMailAccount is an element of GET /mail/accounts.
type listedMailAccount struct {
	ID          int64  `json:"id"`
	UserID      int64  `json:"user_id"`
	UserName    string `json:"user_name"`
	Address     string `json:"address"`
	DisplayName string `json:"display_name"`
	Active      bool   `json:"active"`
}

func TestMailAccountList(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	beta := e.newWorld(t, "beta")
	box := testSecretBox(t)
	account := func(u user, name, address string) listedMailAccount {
		t.Helper()
		srv := impl.MailServerInput{Host: "smtp.example.com", Password: "secret"}
		id := mailAccount(t, e, box, u.id, address, srv, impl.MailServerInput{})
		return listedMailAccount{id, u.id, name, address, "Box " + address, true}
	}
	admin := account(w.admin, "admin of acme", "a-admin@acme.example")
	head := account(w.head, "head of acme", "b-head@acme.example")
	member := account(w.member, "member of acme", "c-member@acme.example")
	member2 := account(w.member, "member of acme", "c-member2@acme.example")
	peer := account(w.peer, "peer of acme", "d-peer@acme.example")
	other := account(w.other, "other of acme", "e-other@acme.example")
	betaAdmin := account(beta.admin, "admin of beta", "a-admin@beta.example")
	if err := impl.DisableMailAccount(t.Context(), e.db, member2.ID); err != nil {
		t.Fatal(err)
	}
	member2.Active = false
	for _, tc := range []struct {
		name  string
		token string
		want  []listedMailAccount
	}{
		// By address: "c-member2@" sorts before "c-member@".
		{"admin: every mail account of the account", w.admin.token, []listedMailAccount{admin, head, member2, member, peer, other}},
		{"head: their department's and their own", w.head.token, []listedMailAccount{head, member2, member, peer}},
		{"member: their own, the disabled one too", w.member.token, []listedMailAccount{member2, member}},
		{"member of another department", w.other.token, []listedMailAccount{other}},
		{"another account's admin", beta.admin.token, []listedMailAccount{betaAdmin}},
		{"a user without mail accounts", beta.member.token, []listedMailAccount{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.get(t, tc.token, "/mail/accounts")
			got := decode[[]listedMailAccount](t, expectQuick(t, r))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			var members map[string]any
			if len(got) > 0 {
				members = decode[[]map[string]any](t, r.Value)[0]
			}
			for _, secret := range []string{"smtp_secret", "smtp_host", "smtp_login", "imap_secret"} {
				if _, ok := members[secret]; ok {
					t.Errorf("the list shows %s", secret)
				}
			}
		})
	}
	t.Run("the member sends through the account the list gives them", func(t *testing.T) {
		sendMail(t, e, w.member.token, map[string]any{"account_id": itoa(member.ID), "to_address": "x@example.com",
			"subject": b64("Hello"), "body": b64("<p>Hi</p>")})
	})
}

func TestDirectoryList(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	beta := e.newWorld(t, "beta")
	// Another account's values are not counted, nor inactive ones.
	if _, err := impl.AddDirectoryValue(t.Context(), e.db, impl.DirectoryValueInput{AccountID: beta.accountID, Code: impl.DirPositions, Name: "CEO"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Exec(`UPDATE directory_values SET active = false WHERE account_id = $1 AND id = $2`, w.accountID, w.dirs[impl.DirDealStages][2]); err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Code   int    `json:"code"`
		Name   string `json:"name"`
		Values int    `json:"values"`
	}
	want := []entry{{9, "Counterparty types", 2}, {10, "Counterparty statuses", 2}, {29, "Counterparty categories", 2},
		{35, "Kinds of tasks", 2}, {40, "Deal types", 2}, {41, "Deal stages", 2}, {42, "Positions of contact persons", 0},
		{43, "Statuses of contact persons", 2}, {44, "Document types", 2}, {45, "Document statuses", 2}, {46, "Payment forms", 2},
		{47, "Income and expense items", 2}, {48, "Agents", 1}, {49, "Counterparty groups", 1}}
	for _, who := range w.roles() {
		t.Run(who.name, func(t *testing.T) {
			got := decode[[]entry](t, expectQuick(t, e.get(t, who.u.token, "/directory/list")))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %v\nwant %v", got, want)
			}
		})
	}
	t.Run("another account", func(t *testing.T) {
		got := decode[[]entry](t, expectQuick(t, e.get(t, beta.member.token, "/directory/list")))
		if got[6] != (entry{42, "Positions of contact persons", 1}) || got[5] != (entry{41, "Deal stages", 3}) {
			t.Errorf("beta's positions and stages: %v %v", got[6], got[5])
		}
	})
	t.Run("every code it lists opens with GET /directory/{code}", func(t *testing.T) {
		for _, d := range want {
			values := decode[[]map[string]any](t, expectQuick(t, e.get(t, w.member.token, fmt.Sprintf("/directory/%d", d.Code))))
			if len(values) != d.Values {
				t.Errorf("directory %d: %d values, the list says %d", d.Code, len(values), d.Values)
			}
		}
	})
}

// TestListParametersInBody: the universal list takes its parameters in the
// query string only; a body that holds them is refused with a text that says
// where they belong, and an empty body, null and {} still pass.
func TestListParametersInBody(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	const want = "request body: the universal list takes its parameters (columns, filters, sort, paging) in the query string, " +
		"not in the body: send no body, null or {}"
	for name, body := range map[string]any{
		"columns and a filter": map[string]any{"columns": "id,name", "name": "Contoso"},
		"paging only":          `{"page": 2}`,
		"an array":             `[{"columns": "id"}]`,
		"a string":             `"columns=id"`,
	} {
		t.Run(name, func(t *testing.T) {
			r := e.post(t, w.admin.token, "/common/list/paging/1?columns=id", body)
			expectError(t, r, "400", want, "")
			if r.errorText() != want {
				t.Errorf("error %q", r.errorText())
			}
		})
	}
	for name, body := range map[string]any{"no body": nil, "null": "null", "{}": "{}"} {
		t.Run("OK "+name, func(t *testing.T) {
			if r := e.post(t, w.admin.token, "/common/list/paging/1?columns=id", body); r.Status != "success" {
				t.Fatalf("%s", r.Raw)
			}
		})
	}
}
