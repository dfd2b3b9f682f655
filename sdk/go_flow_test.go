package sdk_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oapi-codegen/nullable"
	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/demo"
	"github.com/crmservice/crm/sdk/go/crm"
	"github.com/crmservice/crm/sdk/go/crm/api"
)

func ptr[T any](v T) *T { return &v }

// newServer starts the service on a throwaway database with the demo account.
func newServer(t *testing.T) (*httptest.Server, *demo.Demo) {
	t.Helper()
	pool := dbtest.New(t)
	d, err := demo.Load(context.Background(), pool, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	handler, err := impl.NewHandler(impl.Config{DB: pool})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv, d
}

func newClient(t *testing.T, url, token string) *crm.Client {
	t.Helper()
	c, err := crm.New(url, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// asError asserts that err is a *crm.Error with the code and the text.
func asError(t *testing.T, err error, code, text string) *crm.Error {
	t.Helper()
	var e *crm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is no *crm.Error", err, err)
	}
	if e.Code != code || !strings.Contains(e.Message, text) {
		t.Fatalf("error code %q text %q, want %q containing %q", e.Code, e.Message, code, text)
	}
	return e
}

// must returns v, or stops the test (through the recover of catch) on err.
func must[T any](v T, err error) T {
	if err != nil {
		panic(failure{err})
	}
	return v
}

type failure struct{ err error }

// catch turns the panic of must into the failure of the (sub)test t.
func catch(t *testing.T) {
	if r := recover(); r != nil {
		f, ok := r.(failure)
		if !ok {
			panic(r)
		}
		t.Fatal(f.err)
	}
}

func dirValue(t *testing.T, c *crm.Client, code api.DirectoryGetParamsCode) int64 {
	t.Helper()
	vals, err := c.DirectoryGet(context.Background(), code)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) == 0 {
		t.Fatalf("directory %d is empty", code)
	}
	return vals[0].ID
}

// TestGoFlow goes through every operation of the interface with the typed
// client and checks what each decodes to.
func TestGoFlow(t *testing.T) {
	srv, d := newServer(t)
	ctx := context.Background()
	c := newClient(t, srv.URL, d.Token)
	defer catch(t)

	companyType := dirValue(t, c, 9)
	var companyID, contactID, dealID int64

	t.Run("counterparty with contacts, e-mails, phones and requisites", func(t *testing.T) {
		defer catch(t)
		id := must(c.CompanyInsert(ctx, &api.CompanyInsertParams{CheckDuplicates: ptr(true)}, api.CompanyInsertRequest{
			Name: "Flow Widgets", City: ptr("Riga"), TypeId: companyType, UserId: d.AdminUserID, Note: ptr("first note"),
			Emails:         &[]api.EmailInput{{Email: "office@flow-widgets.example"}},
			Phones:         &[]api.PhoneInput{{Phone: "+371 2000 0001", Descr: ptr("reception")}},
			Contacts:       &[]api.ContactInput{{FirstName: ptr("Ilze"), LastName: ptr("Kalna"), Emails: &[]api.EmailInput{{Email: "ilze@flow-widgets.example"}}}},
			Paymentdetails: &api.RequisitesFields{Inn: ptr("4000111222"), BankName: ptr("Flow Bank")},
		}))
		if id <= 0 {
			t.Fatalf("new id %d", id)
		}
		companyID = id
		emailID := must(c.CompanyEmailInsert(ctx, api.CompanyEmailInsertJSONRequestBody{CompanyId: id, Email: "sales@flow-widgets.example"}))
		phoneID := must(c.CompanyPhoneInsert(ctx, api.CompanyPhoneInsertJSONRequestBody{CompanyId: id, Phone: "+371 2000 0002"}))
		reqID := must(c.CompanyRequisitesInsert(ctx, api.CompanyRequisitesInsertJSONRequestBody{IdCompany: id, Inn: ptr("4000111333")}))
		if emailID <= 0 || phoneID <= 0 || reqID <= 0 {
			t.Fatalf("ids %d %d %d", emailID, phoneID, reqID)
		}
		res := must(c.ContactInsert(ctx, api.ContactInsertRequest{CompanyId: id, FirstName: ptr("Juris"), LastName: ptr("Egle"),
			Phones: &[]api.PhoneInput{{Phone: "+371 2000 0003"}}}))
		if res.NewID <= 0 || res.TELEPHONES == nil || len(*res.TELEPHONES) != 1 {
			t.Fatalf("contact insert result %+v", res)
		}
		contactID = res.NewID
	})

	t.Run("duplicate e-mail answers 409 with the existing id", func(t *testing.T) {
		defer catch(t)
		_, err := c.CompanyInsert(ctx, &api.CompanyInsertParams{CheckDuplicates: ptr(true)}, api.CompanyInsertRequest{
			Name: "Flow Copy", TypeId: companyType, UserId: d.AdminUserID, Emails: &[]api.EmailInput{{Email: "OFFICE@flow-widgets.example"}}})
		e := asError(t, err, "409", "office@flow-widgets.example")
		if e.ExistingID != companyID || e.HTTPStatus != http.StatusOK || e.Status != "error" {
			t.Fatalf("duplicate: %+v, want existing id %d", e, companyID)
		}
	})

	t.Run("card", func(t *testing.T) {
		defer catch(t)
		card := must(c.CompanyGet(ctx, companyID))
		if card.Company.Id != companyID || card.Company.Name != "Flow Widgets" || card.Company.City != "Riga" || card.Company.TypeId != companyType {
			t.Fatalf("card company %+v", card.Company)
		}
		if len(card.Emails) != 3 || len(card.Phones) != 3 || len(card.Requisites) != 2 || len(card.Contacts) != 2 {
			t.Fatalf("card has %d e-mails, %d phones, %d requisites, %d contacts", len(card.Emails), len(card.Phones), len(card.Requisites), len(card.Contacts))
		}
		if card.Requisites[0].Inn != "4000111222" || card.Requisites[0].BankName != "Flow Bank" {
			t.Fatalf("default requisites first: %+v", card.Requisites[0])
		}
		_, err := c.CompanyGet(ctx, 999999999)
		e := asError(t, err, "404", "not found")
		if e.Status != "Error" {
			t.Fatalf("status %q, want the card's capital Error", e.Status)
		}
	})

	t.Run("update with null", func(t *testing.T) {
		defer catch(t)
		status := dirValue(t, c, 10)
		done := must(c.CompanyUpdate(ctx, api.CompanyUpdateRequest{Id: companyID, StatusId: nullable.NewNullableWithValue(status), Note: ptr("second note")}))
		if done != 1 {
			t.Fatalf("update value %d", done)
		}
		if card := must(c.CompanyGet(ctx, companyID)); card.Company.StatusId == nil || *card.Company.StatusId != status || card.Company.Note != "second note" {
			t.Fatalf("after update: status %v note %q", card.Company.StatusId, card.Company.Note)
		}
		done = must(c.CompanyUpdate(ctx, api.CompanyUpdateRequest{Id: companyID, StatusId: nullable.NewNullNullable[int64]()}))
		if card := must(c.CompanyGet(ctx, companyID)); done != 1 || card.Company.StatusId != nil {
			t.Fatalf("after null: done %d, status %v", done, card.Company.StatusId)
		}
		_, err := c.CompanyUpdate(ctx, api.CompanyUpdateRequest{Id: companyID, StatusId: nullable.NewNullableWithValue[int64](999999999)})
		e := asError(t, err, "400", "status_id")
		if e.Value != "0" {
			t.Fatalf("failed update value %q, want 0", e.Value)
		}
	})

	t.Run("lists with filters, paging and sort", func(t *testing.T) {
		defer catch(t)
		rows, meta, err := c.CommonListPagingWithMeta(ctx, 1, &api.CommonListPagingParams{
			Columns: ptr("id,name,city"), Name: ptr("flow widgets"), RecordsOnpage: ptr(1)})
		if err != nil {
			t.Fatal(err)
		}
		if meta != (crm.Meta{Rows: 1, Pages: 1, Page: 1}) || len(rows) != 1 || rows[0].Id == nil || *rows[0].Id != companyID || *rows[0].Name != "Flow Widgets" || *rows[0].City != "Riga" {
			t.Fatalf("list: %+v %+v", meta, rows)
		}
		all, meta, err := c.CommonListPagingWithMeta(ctx, 1, &api.CommonListPagingParams{
			Columns: ptr("id,name"), RecordsOnpage: ptr(2), Page: ptr(2), SortingColumn: ptr("name"), SortingDirection: ptr(api.CommonListPagingParamsSortingDirection(0))})
		if err != nil {
			t.Fatal(err)
		}
		if meta.Page != 2 || meta.Rows < 3 || meta.Pages != (meta.Rows+1)/2 || len(all) != 2 || *all[0].Name > *all[1].Name {
			t.Fatalf("page 2 by name: %+v %+v", meta, all)
		}
		contacts := must(c.ContactList(ctx, &api.ContactListParams{CompanyId: &companyID}))
		if len(contacts) != 2 {
			t.Fatalf("contacts %+v", contacts)
		}
		_, err = c.CommonListPaging(ctx, 1, &api.CommonListPagingParams{Columns: ptr("id,colour")})
		asError(t, err, "400", "colour")
	})

	t.Run("tasks", func(t *testing.T) {
		defer catch(t)
		kind := dirValue(t, c, 35)
		id := must(c.TaskInsert(ctx, api.TaskInsertRequest{CompanyId: companyID, TypeId: kind, Note: "call Ilze", ContactId: &contactID}))
		tasks := must(c.TaskList(ctx, &api.TaskListParams{CompanyId: companyID}))
		if len(tasks) != 1 || tasks[0].Id != id || tasks[0].Note != "call Ilze" {
			t.Fatalf("tasks %+v", tasks)
		}
	})

	t.Run("deals with goods, goods update", func(t *testing.T) {
		defer catch(t)
		today := openapi_types.Date{Time: time.Now()}
		id := must(c.DealInsert(ctx, api.DealInsertRequest{CompanyId: companyID, Name: "Flow deal", TypeId: dirValue(t, c, 40), StatusId: dirValue(t, c, 41),
			UserId: d.AdminUserID, DateStart: today, DateFinish: today, Sum: ptr(json.Number("1234567890123456.78"))}))
		dealID = id
		rows := must(c.CommonListPaging(ctx, 20, &api.CommonListPagingParams{Columns: ptr("id,sum"), Id: &id}))
		if len(rows) != 1 || rows[0].Sum == nil || rows[0].Sum.String() != "1234567890123456.78" {
			t.Fatalf("deal sum keeps every digit: %+v", rows)
		}
		if done := must(c.DealGoodsInsert(ctx, id, api.GoodsIds(itoa(d.Samples.GoodsID)))); done != 1 {
			t.Fatalf("goods insert %d", done)
		}
		goods := must(c.DealGoodsList(ctx, id))
		if len(goods) != 1 || goods[0].GoodsId == nil || *goods[0].GoodsId != d.Samples.GoodsID {
			t.Fatalf("deal goods %+v", goods)
		}
		pos := must(c.DealGoodsUpdate(ctx, api.DealGoodsUpdateRequest{DealId: id, Id: goods[0].Id, Qnt: ptr(json.Number("2")), Price: ptr(json.Number("10.005"))}))
		if pos.Qnt.String() != "2.000" && pos.Qnt.String() != "2" || pos.Price.String() != "10.01" || pos.Sum.String() != "20.02" {
			t.Fatalf("updated position qnt %s price %s sum %s", pos.Qnt, pos.Price, pos.Sum)
		}
		if done := must(c.DealUpdate(ctx, api.DealUpdateRequest{Id: id, Name: ptr("Flow deal 2")})); done != 1 {
			t.Fatalf("deal update %d", done)
		}
	})

	t.Run("documents and money quick lists", func(t *testing.T) {
		defer catch(t)
		docs := must(c.DocumentList(ctx, &api.DocumentListParams{CompanyId: &d.Samples.CompanyID}))
		if len(docs) == 0 || !containsDoc(docs, d.Samples.DocumentID) {
			t.Fatalf("documents of the sample counterparty: %+v", docs)
		}
		money, meta, err := c.FinanceListWithMeta(ctx, &api.FinanceListParams{DealId: &d.Samples.DealID})
		if err != nil || len(money) == 0 || meta.Rows != len(money) {
			t.Fatalf("money of the sample deal: %v %+v %+v", err, meta, money)
		}
		positions := must(c.DocumentGoodsList(ctx, d.Samples.DocumentID))
		if len(positions) == 0 {
			t.Fatal("the sample document has no goods positions")
		}
		_, err = c.DocumentList(ctx, nil)
		asError(t, err, "400", "company_id")
	})

	t.Run("directories", func(t *testing.T) {
		defer catch(t)
		vals := must(c.DirectoryGet(ctx, 9))
		if len(vals) == 0 || vals[0].NAME == "" {
			t.Fatalf("directory 9: %+v", vals)
		}
	})

	t.Run("discovery: who am I, users, mail accounts, directories", func(t *testing.T) {
		defer catch(t)
		me := must(c.UserMe(ctx))
		if me.Id != d.AdminUserID || me.Role != "admin" || me.Name == "" || me.TimeZone == "" || me.BaseCurrency == "" {
			t.Fatalf("user/me: %+v", me)
		}
		users := must(c.UserList(ctx))
		if !slices.ContainsFunc(users, func(u api.UserListItem) bool { return u.Id == me.Id && u.Active }) {
			t.Fatalf("user/list lacks the token owner: %+v", users)
		}
		boxes := must(c.MailAccounts(ctx))
		if !slices.ContainsFunc(boxes, func(b api.MailAccountItem) bool { return b.Id == d.MailAccountID && b.UserId == me.Id }) {
			t.Fatalf("mail/accounts lacks the owner's mail account %d: %+v", d.MailAccountID, boxes)
		}
		dirs := must(c.DirectoryList(ctx))
		if len(dirs) != 14 || dirs[0].Code != 9 || dirs[0].Name != "Counterparty types" || dirs[0].Values == 0 {
			t.Fatalf("directory/list: %+v", dirs)
		}
	})

	t.Run("mail send", func(t *testing.T) {
		defer catch(t)
		err := c.MailSend(ctx, api.MailSendRequest{Mail: api.MailMessageInput{AccountId: itoa(d.MailAccountID), ToAddress: "ilze@flow-widgets.example",
			Subject: b64("Offer"), Body: b64("<p>Hello</p>"), CompanyId: &companyID, DealId: &dealID}})
		if err != nil {
			t.Fatal(err)
		}
		rows := must(c.CommonListPaging(ctx, 24, &api.CommonListPagingParams{Columns: ptr("id,subject,to_address"), CompanyId: &companyID}))
		if len(rows) != 1 || *rows[0].Subject != "Offer" {
			t.Fatalf("sent mail in the list: %+v", rows)
		}
	})

	t.Run("dashboards", func(t *testing.T) {
		defer catch(t)
		day := must(c.DashboardMyDay(ctx, nil))
		if day.User.Id != d.AdminUserID {
			t.Fatalf("day dashboard of user %d", day.User.Id)
		}
		tasks := must(c.DashboardMyTasks(ctx, nil))
		if tasks.Date.IsZero() {
			t.Fatalf("my tasks %+v", tasks)
		}
		kpi := must(c.DashboardKpiMy(ctx, nil))
		if kpi.Period == nil && kpi.HasKpi {
			t.Fatalf("kpi %+v", kpi)
		}
		team := must(c.DashboardKpiTeam(ctx, nil))
		if team.Period.DateFrom.IsZero() {
			t.Fatalf("team %+v", team)
		}
		member := newClient(t, srv.URL, d.MemberToken)
		_, err := member.DashboardKpiTeam(ctx, nil)
		e := asError(t, err, "403", "")
		if e.HTTPStatus != http.StatusOK {
			t.Fatalf("403 over HTTP %d", e.HTTPStatus)
		}
	})

	t.Run("401", func(t *testing.T) {
		defer catch(t)
		_, err := newClient(t, srv.URL, "nonsense").CompanyGet(ctx, companyID)
		e := asError(t, err, "401", "")
		if e.HTTPStatus != http.StatusUnauthorized {
			t.Fatalf("HTTP %d", e.HTTPStatus)
		}
	})
}

func containsDoc(docs api.DocumentList, id int64) bool {
	for _, d := range docs {
		if d.Id == id {
			return true
		}
	}
	return false
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
