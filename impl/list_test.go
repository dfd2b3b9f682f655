package impl_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/crmservice/crm/impl"
)

// listFixture is a small known world for the universal list: records of every
// module, owned by different users of w, with values the filters can tell apart.
type listFixture struct {
	w                        *world
	alpha, beta, gamma, gone int64 // counterparties of member, peer, other; gone is deleted
	dealA, dealB             int64 // deals of alpha (member) and beta (peer)
	tasks                    map[string]int64
	docs, money              map[string]int64
	goods                    []int64
	mailMember, mailOther    int64 // mail accounts
	mails                    map[string]int64
}

func (e *env) listFixture(t *testing.T, w *world) *listFixture {
	t.Helper()
	f := &listFixture{w: w, tasks: map[string]int64{}, docs: map[string]int64{}, money: map[string]int64{}, mails: map[string]int64{}}
	company := func(token string, user int64, name, email, phone, inn string) int64 {
		body := map[string]any{"name": name, "type_id": w.dirs[9][0], "user_id": user,
			"Emails": []any{map[string]any{"email": email}}, "Phones": []any{map[string]any{"phone": phone}},
			"Contacts": []any{map[string]any{"first_name": "C", "Emails": []any{map[string]any{"email": "contact." + email}},
				"Phones": []any{map[string]any{"phone": phone + "9"}}}}}
		if inn != "" {
			body["Paymentdetails"] = map[string]any{"inn": inn}
		}
		return insertCompany(t, e, token, body)
	}
	f.alpha = company(w.member.token, w.member.id, "Alpha Dental", "info@alpha.example", "+371 2000-0001", "111")
	f.beta = company(w.peer.token, w.peer.id, "Beta Foods 100%_off", "info@beta.example", "(371) 2000 0002", "")
	f.gamma = company(w.other.token, w.other.id, "Gamma dental", "info@gamma.example", "+372 600 0003", "333")
	f.gone = company(w.member.token, w.member.id, "Gone Dental", "info@gone.example", "+372 600 0004", "")
	e.exec(t, `UPDATE companies SET deleted_at = now() WHERE id = $1`, f.gone)
	e.exec(t, `UPDATE companies SET type_id = $2 WHERE id = $1`, f.beta, w.dirs[9][1])

	f.dealA = e.id(t, `INSERT INTO deals (account_id, name, company_id, type_id, status_id, user_id, date_start, date_finish, sum, tags)
		VALUES ($1, 'Chairs', $2, $3, $4, $5, '2026-03-01', '2026-03-31', 100.10, '{x,y}') RETURNING id`,
		w.accountID, f.alpha, w.dirs[40][0], w.dirs[41][0], w.member.id)
	f.dealB = e.id(t, `INSERT INTO deals (account_id, name, company_id, type_id, status_id, user_id, date_start, date_finish, sum, tags)
		VALUES ($1, 'Desks', $2, $3, $4, $5, '2026-04-01', '2026-04-30', 200.20, '{y}') RETURNING id`,
		w.accountID, f.beta, w.dirs[40][1], w.dirs[41][1], w.peer.id)

	task := func(key string, company, deal any, assignee, assigner int64, start string, tags string) {
		f.tasks[key] = e.id(t, `INSERT INTO tasks (account_id, company_id, deal_id, note, type_id, user_id, assigner_id, date_start, tags)
			VALUES ($1, $2, $3, $4, $5, $6, $7, ($8::timestamp AT TIME ZONE 'Europe/Riga'), $9::text[]) RETURNING id`,
			w.accountID, company, deal, "task "+key, w.dirs[35][0], assignee, assigner, start, tags)
	}
	task("own", f.alpha, f.dealA, w.member.id, w.member.id, "2026-03-05 00:30", "{x}") // just after midnight in Riga
	task("given", f.beta, nil, w.peer.id, w.member.id, "2026-03-04 23:30", "{x,y}")    // assigned by member to peer
	task("other", f.gamma, nil, w.other.id, w.other.id, "2026-03-06 12:00", "{}")      // another department
	task("peer", f.beta, f.dealB, w.peer.id, w.peer.id, "2026-03-07 12:00", "{y}")     // peer's own

	doc := func(key string, company, deal any, user int64, date string, invoice bool) {
		typ := w.dirs[44][1]
		if invoice {
			typ = w.dirs[44][0]
		}
		f.docs[key] = e.id(t, `INSERT INTO documents (account_id, number, date, sum, type_id, user_id, company_id, deal_id, tags)
			VALUES ($1, $2, $3, 10, $4, $5, $6, $7, '{d}') RETURNING id`, w.accountID, "N-"+key, date, typ, user, company, deal)
	}
	doc("inv", f.alpha, f.dealA, w.member.id, "2026-03-10", true)
	doc("contract", f.alpha, nil, w.member.id, "2026-03-11", false)
	doc("peer", f.beta, f.dealB, w.peer.id, "2026-03-12", true)

	f.goods = []int64{
		e.id(t, `INSERT INTO goods (account_id, name, code, price) VALUES ($1, 'Chair Ergo', 'CH-1', 0.10) RETURNING id`, w.accountID),
		e.id(t, `INSERT INTO goods (account_id, name, code, price) VALUES ($1, 'Desk', 'DS-1', 0.20) RETURNING id`, w.accountID),
	}
	e.exec(t, `INSERT INTO goods (account_id, name, active) VALUES ($1, 'Retired', false)`, w.accountID)
	for _, d := range []int64{f.docs["inv"], f.docs["contract"], f.docs["peer"]} {
		e.exec(t, `INSERT INTO document_goods (account_id, document_id, goods_id, description, qnt, price)
			VALUES ($1, $2, $3, 'Chair Ergo', 3, 0.10)`, w.accountID, d, f.goods[0])
	}

	acc := e.id(t, `INSERT INTO money_accounts (account_id, name, currency) VALUES ($1, 'Main', 'EUR') RETURNING id`, w.accountID)
	mov := func(key string, company, deal any, user int64, date string, direction int) {
		f.money[key] = e.id(t, `INSERT INTO money_movements (account_id, date, sum, sum_currency, direction, money_account_id, user_id, company_id, deal_id, tags)
			VALUES ($1, $2, 0.30, 0.30, $3, $4, $5, $6, $7, '{m}') RETURNING id`, w.accountID, date, direction, acc, user, company, deal)
	}
	mov("in", f.alpha, f.dealA, w.member.id, "2026-03-10", 1)
	mov("out", nil, nil, w.member.id, "2026-03-20", 2)
	mov("peer", f.beta, nil, w.peer.id, "2026-03-15", 1)

	f.mailMember = e.id(t, `INSERT INTO mail_accounts (account_id, user_id, address) VALUES ($1, $2, 'member@acme.example') RETURNING id`, w.accountID, w.member.id)
	f.mailOther = e.id(t, `INSERT INTO mail_accounts (account_id, user_id, address) VALUES ($1, $2, 'other@acme.example') RETURNING id`, w.accountID, w.other.id)
	mail := func(key string, box int64, folder int, from, to, subject string, company, deal any, date string) {
		f.mails[key] = e.id(t, `INSERT INTO mail_messages (account_id, mail_account_id, folder, from_address, to_address, subject, company_id, deal_id, date, body)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ($9::timestamp AT TIME ZONE 'Europe/Riga'), '<p>hi</p>') RETURNING id`,
			w.accountID, box, folder, from, to, subject, company, deal, date)
	}
	mail("in", f.mailMember, 1, "info@alpha.example", "member@acme.example", "Order Confirmation", f.alpha, f.dealA, "2026-03-01 10:00")
	mail("sent", f.mailMember, 2, "member@acme.example", "info@beta.example", "Offer", f.beta, nil, "2026-03-02 10:00")
	mail("other", f.mailOther, 1, "info@gamma.example", "other@acme.example", "Order", f.gamma, nil, "2026-03-03 10:00")
	return f
}

func (e *env) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := e.db.Exec(query, args...); err != nil {
		t.Fatalf("%v\n%s", err, query)
	}
}

func (e *env) id(t *testing.T, query string, args ...any) int64 {
	t.Helper()
	var id int64
	if err := e.db.Get(&id, query, args...); err != nil {
		t.Fatalf("%v\n%s", err, query)
	}
	return id
}

// list calls the universal list and returns the reply and its rows.
func (e *env) list(t *testing.T, token string, module int, query string) (reply, []map[string]any) {
	t.Helper()
	r := e.do(t, request{method: "POST", target: fmt.Sprintf("/common/list/paging/%d?%s", module, query), token: token})
	if r.Status != "success" {
		return r, nil
	}
	return r, decode[[]map[string]any](t, r.Value)
}

// listIDs returns the ids of a successful list, failing on an error reply.
func (e *env) listIDs(t *testing.T, token string, module int, query string) []int64 {
	t.Helper()
	r, rows := e.list(t, token, module, query)
	if r.Status != "success" {
		t.Fatalf("module %d ?%s: %s", module, query, r.Raw)
	}
	ids := []int64{}
	for _, row := range rows {
		ids = append(ids, int64(row["id"].(float64)))
	}
	if r.Rows < len(ids) {
		t.Errorf("rows %d smaller than the page (%d)", r.Rows, len(ids))
	}
	return ids
}

func TestListFilters(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	f := e.listFixture(t, w)
	e.exec(t, `INSERT INTO user_filters (account_id, module, name, definition) VALUES
		($1, 1, 'dental', '{"name": "dental"}'), ($1, 1, 'with tax', '{"tax_id": "111"}'),
		($1, 20, 'stage one', $2), ($1, 24, 'orders', '{"subject": "order"}'), ($1, 1, 'bad', '{"segment": 1}')`,
		w.accountID, fmt.Sprintf(`{"status_id": %d}`, w.dirs[41][0]))
	var rf []int64
	if err := e.db.Select(&rf, `SELECT id FROM user_filters WHERE account_id = $1 ORDER BY id`, w.accountID); err != nil {
		t.Fatal(err)
	}

	ids := func(v ...int64) []int64 { return v }
	for _, tc := range []struct {
		module int
		query  string
		want   []int64
	}{
		{1, "", ids(f.gamma, f.beta, f.alpha)}, // newest first, the deleted one never
		{1, "id=" + fmt.Sprint(f.beta), ids(f.beta)},
		{1, "id=" + fmt.Sprint(f.gone), ids()},
		{1, "name=DENTAL", ids(f.gamma, f.alpha)},
		{1, "name=" + url.QueryEscape("100%_"), ids(f.beta)},
		{1, "name=" + url.QueryEscape("%"), ids(f.beta)}, // wildcards match themselves
		{1, "name=_", ids(f.beta)},
		{1, "email=INFO@alpha.example", ids(f.alpha)},
		{1, "email=contact.info@beta.example", ids(f.beta)}, // a contact person's e-mail
		{1, "email=alpha.example", ids()},                   // whole addresses only
		{1, "phone=" + url.QueryEscape("37120000001"), ids(f.alpha)},
		{1, "phone=" + url.QueryEscape("2000 0002"), ids(f.beta)},      // the end of the digits, any formatting
		{1, "phone=" + url.QueryEscape("2000-00029"), ids(f.beta)},     // a contact person's phone
		{1, "phone=" + url.QueryEscape("+372 6000 003"), ids(f.gamma)}, // formatting ignored
		{1, "tax_id=111", ids(f.alpha)},
		{1, "tax_id=222", ids()},
		{1, "user_ids=" + fmt.Sprintf("%d,%d", w.member.id, w.other.id), ids(f.gamma, f.alpha)},
		{1, "name=dental&user_ids=" + fmt.Sprint(w.other.id), ids(f.gamma)},
		{1, fmt.Sprintf("user_filter_ids=%d", rf[0]), ids(f.gamma, f.alpha)},
		{1, fmt.Sprintf("user_filter_ids=%d,%d", rf[0], rf[1]), ids(f.alpha)},
		{2, "", ids(f.tasks["peer"], f.tasks["other"], f.tasks["given"], f.tasks["own"])},
		{2, "company_id=" + fmt.Sprint(f.beta), ids(f.tasks["peer"], f.tasks["given"])},
		{2, "deal_id=" + fmt.Sprint(f.dealA), ids(f.tasks["own"])},
		{2, "user_ids=" + fmt.Sprint(w.peer.id), ids(f.tasks["peer"], f.tasks["given"])},
		{2, "date1=2026-03-05&date2=2026-03-06", ids(f.tasks["other"], f.tasks["own"])}, // days in Riga time
		{2, "date2=2026.03.04", ids(f.tasks["given"])},
		{2, "tags=x", ids(f.tasks["given"], f.tasks["own"])},
		{2, "tags=y,x", ids(f.tasks["given"])},
		{4, "", ids(f.docs["peer"], f.docs["contract"], f.docs["inv"])},
		{4, "deal_id=" + fmt.Sprint(f.dealA), ids(f.docs["inv"])},
		{4, "company_id=" + fmt.Sprint(f.alpha) + "&date1=2026-03-11", ids(f.docs["contract"])},
		{4, "tags=d&user_ids=" + fmt.Sprint(w.peer.id), ids(f.docs["peer"])},
		{5, "", ids(f.money["peer"], f.money["out"], f.money["in"])},
		{5, "date1=2026-03-11&date2=2026-03-20", ids(f.money["peer"], f.money["out"])},
		{5, "company_id=" + fmt.Sprint(f.alpha), ids(f.money["in"])},
		{5, "deal_id=" + fmt.Sprint(f.dealA) + "&tags=m", ids(f.money["in"])},
		{6, "user_ids=" + fmt.Sprint(w.peer.id), nil}, // checked by count below: invoices only
		{20, "", ids(f.dealB, f.dealA)},
		{20, "type_id=" + fmt.Sprint(w.dirs[40][1]), ids(f.dealB)},
		{20, "status_id=" + fmt.Sprint(w.dirs[41][0]), ids(f.dealA)},
		{20, "date1=2026-03-15", ids(f.dealB)},
		{20, "tags=x", ids(f.dealA)},
		{20, "company_id=" + fmt.Sprint(f.beta) + "&id=" + fmt.Sprint(f.dealB), ids(f.dealB)},
		{20, fmt.Sprintf("user_filter_ids=%d", rf[2]), ids(f.dealA)},
		{21, "", ids(f.goods[1], f.goods[0])}, // the inactive one never
		{21, "name=chair", ids(f.goods[0])},
		{24, "", ids(f.mails["sent"], f.mails["in"])}, // the admin's own mailboxes: none; see below
		{24, "segment=1", ids(f.mails["in"])},
		{24, "subject=order", ids(f.mails["in"])},
		{24, "to_address=BETA", ids(f.mails["sent"])},
		{24, "from_address=alpha", ids(f.mails["in"])},
		{24, "date1=2026.03.02", ids(f.mails["sent"])},
		{24, "company_id=" + fmt.Sprint(f.alpha) + "&deal_id=" + fmt.Sprint(f.dealA), ids(f.mails["in"])},
		{24, "id=" + fmt.Sprint(f.mails["sent"]), ids(f.mails["sent"])},
		{24, fmt.Sprintf("user_filter_ids=%d", rf[3]), ids(f.mails["in"])},
		{24, "user_ids=" + fmt.Sprint(w.other.id), ids(f.mails["other"])},
	} {
		t.Run(fmt.Sprintf("%d?%s", tc.module, tc.query), func(t *testing.T) {
			token := w.admin.token
			if tc.module == 24 && !strings.Contains(tc.query, "user_ids") {
				token = w.member.token // mail shows the token owner's own mailboxes
			}
			got := e.listIDs(t, token, tc.module, "columns=id&"+tc.query)
			if tc.want == nil {
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ids %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("sales are invoice positions", func(t *testing.T) {
		r, rows := e.list(t, w.admin.token, 6, "columns=id,document_id,number,discription,qnt,price,sum,user_id")
		if r.Rows != 2 || len(rows) != 2 || rows[0]["number"] != "N-peer" || rows[1]["number"] != "N-inv" {
			t.Fatalf("sales %s", r.Value)
		}
		if !strings.Contains(r.Value, `"qnt":3.000,"price":0.10,"sum":0.30`) {
			t.Errorf("amounts not exact: %s", r.Value)
		}
	})

	t.Run("unsupported filters", func(t *testing.T) {
		supported := map[string][]int{
			"company_id": {2, 4, 5, 6, 20, 24}, "deal_id": {2, 4, 5, 6, 24}, "id": {1, 20, 21, 24, 50},
			"user_ids": {1, 2, 4, 5, 6, 20, 24, 50}, "date1": {2, 4, 5, 6, 20, 24, 50}, "date2": {2, 4, 5, 6, 20, 24, 50},
			"tags": {2, 4, 5, 20}, "type_id": {20}, "status_id": {20}, "name": {1, 21}, "email": {1}, "phone": {1},
			"tax_id": {1}, "user_filter_ids": {1, 20, 24}, "segment": {24}, "subject": {24}, "to_address": {24},
			"from_address": {24},
		}
		values := map[string]string{"user_ids": "1", "date1": "2026-01-01", "date2": "2026-01-01", "user_filter_ids": "1",
			"segment": "1", "phone": "123"}
		for filter, modules := range supported {
			for _, m := range []int{1, 2, 4, 5, 6, 20, 21, 24, 50} {
				if slices.Contains(modules, m) {
					continue
				}
				v := values[filter]
				if v == "" {
					v = "1"
				}
				r, _ := e.list(t, w.admin.token, m, "columns=id&"+filter+"="+v)
				expectError(t, r, "400", fmt.Sprintf("filter %s is not supported by module %d", filter, m), "")
			}
		}
	})

	t.Run("bad filter values", func(t *testing.T) {
		for _, tc := range []struct {
			module       int
			query, error string
		}{
			{1, fmt.Sprintf("user_filter_ids=%d", rf[3]), "user_filter_ids: a ready filter of module 1 does not exist"},
			{1, fmt.Sprintf("user_filter_ids=%d", rf[4]), fmt.Sprintf("ready filter %d: filter segment is not supported by module 1", rf[4])},
			{1, "user_filter_ids=999999", "user_filter_ids: a ready filter of module 1 does not exist"},
			{1, "phone=12", "phone: give at least 3 digits"},
			{2, "date1=2026-02-30", `date1: "2026-02-30" is not a date`},
			{2, "date1=20260101", `query parameter "date1"`},
			{2, "tags=,", "tags: no tag given"},
			{1, "user_ids=1,,2", `query parameter "user_ids"`},
		} {
			r, _ := e.list(t, w.admin.token, tc.module, "columns=id&"+tc.query)
			expectError(t, r, "400", tc.error, "")
		}
	})
}

func TestListColumns(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	f := e.listFixture(t, w)
	e.exec(t, `INSERT INTO field_definitions (account_id, module, name, type) VALUES ($1, 1, 'industry', 'text'), ($1, 20, 'budget', 'number')`, w.accountID)
	e.exec(t, `UPDATE companies SET extra = '{"industry": "dental", "undeclared": 1}' WHERE id = $1`, f.alpha)
	e.exec(t, `UPDATE deals SET extra = '{"budget": 1000.50}' WHERE id = $1`, f.dealA)

	all := map[int]string{
		1:  "id,name,address,created,city,region,country,activity_type,property_form,type_id,type,created_by,info_source,first_name,middle_name,last_name,url,user_id,user_name,person,note,external_code,category_id,category,status_id,status,agent_id,agent,tax_id,which_site_source,which_host_source,which_link_source,utm_campaign,utm_source,utm_medium,utm_content,utm_term,ADD_industry",
		2:  "id,note,status_id,status,type_id,type,date_start,date_finish,result,user_id,user_name,company_id,company_name,deal_id,contact_id,is_hot,tags",
		4:  "id,number,date,sum,type_id,type,status_id,status,note,user_id,user_name,company_id,company_name,deal_id,deal,contact_id,date_expire,external_code,tags",
		5:  "id,date,sum,sum_currency,direction_id,direction,type_id,type,category_id,category,account_id,account,currency,note,user_id,user_name,company_id,company_name,deal_id,tags",
		6:  "id,date,document_id,number,company_id,company_name,deal_id,goods_id,discription,code,qnt,price,discount,vat,sum,user_id,user_name",
		20: "id,name,sum,type_id,type,status_id,status,company_id,company_name,company_type,company_status,company_category,company_tax_id,company_country,company_region,company_city,company_url,user_id,user_name,note,ADD_budget",
		21: "id,name,code,unit,price,qnt,vat,note",
		24: "id,from,from_address,to,to_address,cc,bcc,subject,date,user_name,company_id,company_name,contact_id,contact,company_type_id,company_type,company_category_id,company_category,company_status_id,company_status,deal_id,deal,message_id,attachment_flag,small_part_of_body,body",
		50: "id,date,user_id,user_name,module,entity,record_id,action,changes",
	}
	for module, columns := range all {
		t.Run(fmt.Sprint(module), func(t *testing.T) {
			names := strings.Split(columns, ",")
			slices.Reverse(names) // any order
			token := w.admin.token
			if module == 24 {
				token = w.member.token
			}
			r, rows := e.list(t, token, module, "columns="+strings.Join(names, ","))
			if r.Status != "success" || len(rows) == 0 {
				t.Fatalf("reply %s", r.Raw)
			}
			// Keys exactly as requested, in the requested order.
			dec := json.NewDecoder(bytes.NewReader([]byte(r.Value)))
			var raw []json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatal(err)
			}
			if keys := objectKeys(t, raw[0]); !slices.Equal(keys, names) {
				t.Fatalf("keys %v, want %v", keys, names)
			}
			for _, name := range names {
				r := e.listIDs(t, token, module, "columns=id&sorting_column="+name+"&sorting_direction=0")
				if len(r) == 0 {
					t.Errorf("sorting by %s lost the rows", name)
				}
			}
		})
	}

	t.Run("values", func(t *testing.T) {
		_, rows := e.list(t, w.admin.token, 1, "columns=name,ADD_industry,type,user_name,tax_id,created_by&id="+fmt.Sprint(f.alpha))
		want := map[string]any{"name": "Alpha Dental", "ADD_industry": "dental", "type": "Client", "user_name": "member of acme",
			"tax_id": "111", "created_by": "member of acme"}
		if len(rows) != 1 || !reflect.DeepEqual(rows[0], want) {
			t.Errorf("counterparty %v, want %v", rows, want)
		}
		r, _ := e.list(t, w.admin.token, 20, "columns=id,ADD_budget,sum,company_type&id="+fmt.Sprint(f.dealA))
		if want := fmt.Sprintf(`[{"id":%d,"ADD_budget":1000.50,"sum":100.10,"company_type":"Client"}]`, f.dealA); r.Value != want {
			t.Errorf("deal %s, want %s", r.Value, want)
		}
		r, _ = e.list(t, w.admin.token, 2, "columns=id,date_start,status,is_hot,tags&tags=x,y")
		if want := fmt.Sprintf(`[{"id":%d,"date_start":"2026-03-04 23:30:00","status":"in work","is_hot":0,"tags":"x,y"}]`, f.tasks["given"]); r.Value != want {
			t.Errorf("task %s, want %s", r.Value, want)
		}
		r, _ = e.list(t, w.member.token, 24, "id="+fmt.Sprint(f.mails["in"]))
		if want := fmt.Sprintf(`[{"id":%d,"date":"2026-03-01 10:00:00","from":"info@alpha.example","to":"member@acme.example","subject":"Order Confirmation","company_name":"Alpha Dental","attachment_flag":0}]`, f.mails["in"]); r.Value != want {
			t.Errorf("mail's default columns %s, want %s", r.Value, want)
		}
	})

	for _, tc := range []struct {
		name, query, error string
		module             int
	}{
		{"unknown column", "columns=id,colour", `columns: unknown column "colour" of module 1`, 1},
		{"another module's column", "columns=id,number", `columns: unknown column "number" of module 1`, 1},
		{"undeclared ADD_ field", "columns=id,ADD_undeclared", `columns: unknown column "ADD_undeclared" of module 1`, 1},
		{"ADD_ of a module without them", "columns=id,ADD_industry", `columns: unknown column "ADD_industry" of module 2`, 2},
		{"twice", "columns=id,name,id", `columns: "id" is requested twice`, 1},
		{"missing", "", "columns is required for module 1", 1},
		{"unknown sort column", "columns=id&sorting_column=colour", `sorting_column: unknown column "colour" of module 1`, 1},
		{"bad module", "columns=id", `path parameter "module"`, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := e.list(t, w.admin.token, tc.module, tc.query)
			expectError(t, r, "400", tc.error, "")
		})
	}
}

// objectKeys lists the keys of a JSON object in their order.
func objectKeys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestListPagingAndTotals(t *testing.T) {
	// Filtered lists of more than 7 matches take the counted path, fewer the
	// single pass: both are walked below.
	e := newEnv(t, func(c *impl.Config) { c.ListScanOnce = 7 })
	w := e.newWorld(t, "acme")
	// 23 counterparties of the member with only 3 cities, so sorts by city tie a lot.
	for i := range 23 {
		insertCompany(t, e, w.member.token, map[string]any{"name": fmt.Sprintf("C%02d", i), "type_id": w.dirs[9][0],
			"user_id": w.member.id, "city": []string{"Riga", "Tallinn", "Vilnius"}[i%3]})
	}
	for _, tc := range []struct {
		query             string
		rows, pages, page int
		n                 int
	}{
		{"columns=id&records_onpage=10", 23, 3, 1, 10},
		{"columns=id&records_onpage=10&page=3", 23, 3, 3, 3},
		{"columns=id&records_onpage=10&page=4", 23, 3, 4, 0}, // past the end: empty, not an error
		{"columns=id&records_onpage=500", 23, 1, 1, 23},
		{"columns=id&name=C1&records_onpage=4", 10, 3, 1, 4}, // C1, C10..C19: a counted total
		{"columns=id", 23, 1, 1, 23},                         // 50 per page by default
	} {
		r, rows := e.list(t, w.member.token, 1, tc.query)
		if r.Status != "success" || r.Rows != tc.rows || r.Pages != tc.pages || r.Page != tc.page || len(rows) != tc.n {
			t.Errorf("?%s: rows %d pages %d page %d with %d records, want %d %d %d with %d\n%s",
				tc.query, r.Rows, r.Pages, r.Page, len(rows), tc.rows, tc.pages, tc.page, tc.n, r.Raw)
		}
		if tc.n == 0 && r.Value != "[]" {
			t.Errorf("?%s: value %s, want []", tc.query, r.Value)
		}
	}
	r, _ := e.list(t, w.member.token, 1, "columns=id&records_onpage=501")
	expectError(t, r, "400", `query parameter "records_onpage": number must be at most 500`, "")
	r, _ = e.list(t, w.member.token, 1, "columns=id&page=0")
	expectError(t, r, "400", `query parameter "page"`, "")

	t.Run("walking the pages returns each record once", func(t *testing.T) {
		for _, filter := range []string{"", "&name=C", "&name=C2"} { // unfiltered, counted (23 > 7), single pass (3)
			want := map[string]int{"": 23, "&name=C": 23, "&name=C2": 3}[filter]
			for _, sort := range []string{"city", "name", "id"} {
				var seen []int64
				for page := 1; page <= 5; page++ {
					r, rows := e.list(t, w.member.token, 1, fmt.Sprintf("columns=id&records_onpage=5&page=%d&sorting_column=%s&sorting_direction=0%s", page, sort, filter))
					if r.Rows != want {
						t.Fatalf("%s sorted by %s: rows %d, want %d", filter, sort, r.Rows, want)
					}
					for _, row := range rows {
						seen = append(seen, int64(row["id"].(float64)))
					}
				}
				sorted := slices.Clone(seen)
				slices.Sort(sorted)
				if len(seen) != want || len(slices.Compact(sorted)) != want {
					t.Errorf("%s sorted by %s: %d records over the pages, want %d distinct", filter, sort, len(seen), want)
				}
			}
		}
		for _, sort := range []string{"city", "name", "created", "user_name", "type"} {
			for _, dir := range []string{"0", "1"} {
				var seen []int64
				for page := 1; page <= 5; page++ {
					seen = append(seen, e.listIDs(t, w.member.token, 1,
						fmt.Sprintf("columns=id&records_onpage=5&page=%d&sorting_column=%s&sorting_direction=%s", page, sort, dir))...)
				}
				sorted := slices.Clone(seen)
				slices.Sort(sorted)
				if len(seen) != 23 || len(slices.Compact(sorted)) != 23 {
					t.Errorf("sorted by %s (%s): %d records over the pages, %d distinct; want 23", sort, dir, len(seen), len(slices.Compact(sorted)))
				}
			}
		}
	})

	t.Run("kept totals follow inserts, moves and deletions", func(t *testing.T) {
		total := func(token string) int {
			t.Helper()
			r, _ := e.list(t, token, 1, "columns=id&records_onpage=1")
			return r.Rows
		}
		counted := func(user int64) int {
			return e.count(t, `SELECT count(*) FROM companies WHERE account_id = $1 AND deleted_at IS NULL AND ($2 = 0 OR user_id = $2)`, w.accountID, user)
		}
		check := func(step string) {
			t.Helper()
			for _, who := range []struct {
				token string
				want  int
			}{
				{w.admin.token, counted(0)}, {w.member.token, counted(w.member.id)}, {w.peer.token, counted(w.peer.id)},
				{w.head.token, counted(w.member.id) + counted(w.peer.id) + counted(w.head.id)}, {w.other.token, counted(w.other.id)},
			} {
				if got := total(who.token); got != who.want {
					t.Errorf("%s: total %d, want %d", step, got, who.want)
				}
			}
		}
		check("start")
		moved := insertCompany(t, e, w.peer.token, map[string]any{"name": "Moved", "type_id": w.dirs[9][0], "user_id": w.peer.id})
		check("insert")
		e.exec(t, `UPDATE companies SET user_id = $2 WHERE id = $1`, moved, w.other.id)
		check("move to another department")
		e.exec(t, `UPDATE companies SET deleted_at = now() WHERE id = $1`, moved)
		check("soft delete")
		e.exec(t, `DELETE FROM journal WHERE account_id = $1`, w.accountID)
		e.exec(t, `DELETE FROM contacts WHERE company_id = $1`, moved)
		e.exec(t, `DELETE FROM companies WHERE id = $1`, moved)
		check("delete")
		// A head's tasks are counted: assignee and assigner may both be in the department.
		e.exec(t, `INSERT INTO tasks (account_id, company_id, note, type_id, user_id, assigner_id, date_start)
			SELECT $1, id, 'n', $2, $3, $4, now() FROM companies WHERE account_id = $1`, w.accountID, w.dirs[35][0], w.member.id, w.peer.id)
		for _, who := range []struct {
			token string
			want  int
		}{{w.admin.token, 23}, {w.member.token, 23}, {w.peer.token, 23}, {w.head.token, 23}, {w.other.token, 0}} {
			if r, _ := e.list(t, who.token, 2, "columns=id&records_onpage=1"); r.Rows != who.want {
				t.Errorf("tasks total %d, want %d", r.Rows, who.want)
			}
		}
	})
}

func TestListAccess(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	f := e.listFixture(t, w)
	b := e.newWorld(t, "beta")
	e.listFixture(t, b)

	for _, tc := range []struct {
		name   string
		token  string
		module int
		query  string
		want   []int64
	}{
		{"member: own counterparties", w.member.token, 1, "", []int64{f.alpha}},
		{"head: the department's", w.head.token, 1, "", []int64{f.beta, f.alpha}},
		{"other: own", w.other.token, 1, "", []int64{f.gamma}},
		{"user_ids cannot widen", w.member.token, 1, fmt.Sprintf("user_ids=%d,%d", w.peer.id, w.other.id), []int64{}},
		{"member: tasks as assignee or assigner", w.member.token, 2, "", []int64{f.tasks["given"], f.tasks["own"]}},
		{"peer: tasks", w.peer.token, 2, "", []int64{f.tasks["peer"], f.tasks["given"]}},
		{"head: tasks of the department", w.head.token, 2, "", []int64{f.tasks["peer"], f.tasks["given"], f.tasks["own"]}},
		{"member: documents", w.member.token, 4, "", []int64{f.docs["contract"], f.docs["inv"]}},
		{"member: money", w.member.token, 5, "", []int64{f.money["out"], f.money["in"]}},
		{"peer: sales", w.peer.token, 6, "", nil},
		{"member: deals", w.member.token, 20, "", []int64{f.dealA}},
		{"member: goods are everyone's", w.member.token, 21, "", []int64{f.goods[1], f.goods[0]}},
		{"member: another's mail", w.member.token, 24, fmt.Sprintf("user_ids=%d", w.other.id), []int64{}},
		{"head: the department's mail", w.head.token, 24, fmt.Sprintf("user_ids=%d,%d", w.member.id, w.other.id), []int64{f.mails["sent"], f.mails["in"]}},
		{"admin: anyone's mail", w.admin.token, 24, fmt.Sprintf("user_ids=%d", w.other.id), []int64{f.mails["other"]}},
		{"admin: own mail (none)", w.admin.token, 24, "", []int64{}},
		{"another account, same ids", b.admin.token, 1, "id=" + fmt.Sprint(f.alpha), []int64{}},
		{"another account's deal filter", b.admin.token, 2, "deal_id=" + fmt.Sprint(f.dealA), []int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, rows := e.list(t, tc.token, tc.module, "columns=id&"+tc.query)
			if r.Status != "success" {
				t.Fatalf("%s", r.Raw)
			}
			got := []int64{}
			for _, row := range rows {
				got = append(got, int64(row["id"].(float64)))
			}
			if tc.want != nil && !slices.Equal(got, tc.want) {
				t.Fatalf("ids %v, want %v", got, tc.want)
			}
			if r.Rows != len(got) {
				t.Errorf("rows %d for %d records", r.Rows, len(got))
			}
		})
	}

	t.Run("journal", func(t *testing.T) {
		_, rows := e.list(t, w.member.token, 50, "columns=user_id,module,entity,record_id,action&records_onpage=500")
		if len(rows) == 0 {
			t.Fatal("the member's inserts are not in the journal")
		}
		for _, row := range rows {
			if int64(row["user_id"].(float64)) != w.member.id {
				t.Fatalf("a member sees another user's change: %v", row)
			}
		}
		want := map[string]any{"user_id": float64(w.member.id), "module": 1.0, "entity": "company", "record_id": float64(f.alpha), "action": "insert"}
		if !slices.ContainsFunc(rows, func(r map[string]any) bool { return reflect.DeepEqual(r, want) }) {
			t.Errorf("the insert of Alpha is not in the journal: %v", rows)
		}
		adminRows := e.count(t, `SELECT count(*) FROM journal WHERE account_id = $1`, w.accountID)
		if r, _ := e.list(t, w.admin.token, 50, "columns=id"); r.Rows != adminRows {
			t.Errorf("admin journal total %d, want %d", r.Rows, adminRows)
		}
	})
}

// TestListInjection sends SQL through every string parameter, columns and
// sorting_column: each is refused or matched as plain text, and nothing changes.
func TestListInjection(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	e.listFixture(t, w)
	before := e.count(t, `SELECT (SELECT count(*) FROM companies) + (SELECT count(*) FROM tasks) + (SELECT count(*) FROM users)`)
	payloads := []string{
		`'; DROP TABLE companies; --`, `x' OR '1'='1`, `1) OR (1=1`, `id; DELETE FROM users`,
		`name" FROM users --`, `$1`, `\'; SELECT pg_sleep(5); --`, `%' OR 1=1 --`,
	}
	params := []struct {
		module int
		name   string
	}{
		{1, "name"}, {1, "email"}, {1, "phone"}, {1, "tax_id"}, {1, "user_ids"}, {1, "user_filter_ids"},
		{2, "tags"}, {2, "date1"}, {24, "subject"}, {24, "to_address"}, {24, "from_address"}, {21, "name"},
		{1, "columns"}, {1, "sorting_column"}, {20, "sorting_column"},
	}
	for _, p := range params {
		for _, payload := range payloads {
			query := "columns=id&" + p.name + "=" + url.QueryEscape(payload)
			if p.name == "columns" {
				query = "columns=" + url.QueryEscape(payload)
			}
			r, rows := e.list(t, w.admin.token, p.module, query)
			switch {
			case r.Status == "error" && r.code() == "400":
			case r.Status == "success" && len(rows) == 0:
			default:
				t.Errorf("%d %s=%q: %s", p.module, p.name, payload, r.Raw)
			}
		}
	}
	if after := e.count(t, `SELECT (SELECT count(*) FROM companies) + (SELECT count(*) FROM tasks) + (SELECT count(*) FROM users)`); after != before {
		t.Fatalf("rows changed from %d to %d", before, after)
	}
	if strings.Contains(e.logText(), "internal error") {
		t.Errorf("an injection attempt caused an internal error:\n%s", e.logText())
	}
}

// TestListNamesOfThePage checks the names a page shows of joined users,
// counterparties, deals and directory values, which the fast list writes
// into the page after reading it (impl/list_fast.go, pageMarks): byte for
// byte as the single statement writes them, with a name that JSON escapes,
// the empty string for a counterparty the caller may not open or a deal a
// record lacks, and a note that holds the control character the marks use.
func TestListNamesOfThePage(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	f := e.listFixture(t, w)
	odd := "Beta \"Foods\" \\ 100%_off\n\t\x01\b\f Ω 😀"
	e.exec(t, `UPDATE companies SET name = $2 WHERE id = $1`, f.beta, odd)
	e.exec(t, `UPDATE users SET name = $2 WHERE id = $1`, w.peer.id, "Peer </b> & \"co\"")
	e.exec(t, `UPDATE tasks SET note = $2 WHERE id = $1`, f.tasks["given"], "note \x01b\x02 7\x01")
	oddJSON := `"Beta \"Foods\" \\ 100%_off\n\t\u0001\b\f Ω 😀"`
	peerJSON := `"Peer </b> & \"co\""`

	for _, tc := range []struct {
		name, token, query string
		module, rows       int
		want               string
	}{
		{"tasks, member", w.member.token, "columns=id,note,user_name,company_name,type&sorting_column=id&sorting_direction=0", 2, 2,
			fmt.Sprintf(`[{"id":%d,"note":"task own","user_name":"member of acme","company_name":"Alpha Dental","type":"%s"},`+
				`{"id":%d,"note":"note \u0001b\u0002 7\u0001","user_name":%s,"company_name":"","type":"%s"}]`,
				f.tasks["own"], e.dirName(t, w.dirs[35][0]), f.tasks["given"], peerJSON, e.dirName(t, w.dirs[35][0]))},
		{"tasks of one page, admin", w.admin.token, "columns=company_name,user_name&sorting_column=id&sorting_direction=0&records_onpage=2&page=2", 2, 4,
			fmt.Sprintf(`[{"company_name":"Gamma dental","user_name":"other of acme"},{"company_name":%s,"user_name":%s}]`, oddJSON, peerJSON)},
		{"deals, admin", w.admin.token, "columns=id,name,company_name,user_name,status&sorting_column=id&sorting_direction=0", 20, 2,
			fmt.Sprintf(`[{"id":%d,"name":"Chairs","company_name":"Alpha Dental","user_name":"member of acme","status":"%s"},`+
				`{"id":%d,"name":"Desks","company_name":%s,"user_name":%s,"status":"%s"}]`,
				f.dealA, e.dirName(t, w.dirs[41][0]), f.dealB, oddJSON, peerJSON, e.dirName(t, w.dirs[41][1]))},
		{"documents' deal, admin", w.admin.token, "columns=number,deal,company_name&sorting_column=id&sorting_direction=0", 4, 3,
			fmt.Sprintf(`[{"number":"N-inv","deal":"Chairs","company_name":"Alpha Dental"},{"number":"N-contract","deal":"","company_name":"Alpha Dental"},`+
				`{"number":"N-peer","deal":"Desks","company_name":%s}]`, oddJSON)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := e.list(t, tc.token, tc.module, tc.query)
			if r.Status != "success" || r.Value != tc.want || r.Rows != tc.rows {
				t.Errorf("reply %s, rows %d\nwant value %s, rows %d", r.Raw, r.Rows, tc.want, tc.rows)
			}
		})
	}
}

// dirName is the name of a directory value.
func (e *env) dirName(t *testing.T, id int64) string {
	t.Helper()
	var name string
	if err := e.db.Get(&name, `SELECT name FROM directory_values WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	return name
}
