package conformance_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/crmservice/crm/conformance"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/demo"
	"github.com/crmservice/crm/impl/mailer"
)

// TestCasesAgainstServer replays every documented case against this server on
// the demo data, as `make conformance` does against a running process.
func TestCasesAgainstServer(t *testing.T) {
	pool := dbtest.New(t)
	d, err := demo.Load(context.Background(), pool, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := mailer.NewSecretBox(base64.StdEncoding.EncodeToString(key))
	if err != nil {
		t.Fatal(err)
	}
	handler, err := impl.NewHandler(impl.Config{DB: pool, Secrets: box}) // the webhook cases need a key
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()

	contract, err := conformance.LoadContract("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	suites, err := conformance.LoadCases(conformance.EmbeddedCases())
	if err != nil {
		t.Fatal(err)
	}
	runner := &conformance.Runner{
		BaseURL: srv.URL, Token: d.Token, Contract: contract,
		Vars: map[string]string{
			"user_id":            strconv.FormatInt(d.AdminUserID, 10),
			"mail_account_id":    strconv.FormatInt(d.MailAccountID, 10),
			"sample_goods_id":    strconv.FormatInt(d.Samples.GoodsID, 10),
			"sample_company_id":  strconv.FormatInt(d.Samples.CompanyID, 10),
			"sample_deal_id":     strconv.FormatInt(d.Samples.DealID, 10),
			"sample_document_id": strconv.FormatInt(d.Samples.DocumentID, 10),
			"member_token":       d.MemberToken,
		},
	}
	report := runner.Run(context.Background(), suites)
	for _, r := range report.Results {
		if !r.Pass {
			t.Errorf("%s: %s\n  request: %s\n  reply %d: %s", r.Name(), r.Reason(), r.Request, r.HTTPStatus, r.Body)
		}
	}
	if len(report.Results) == 0 {
		t.Fatal("no cases ran")
	}
	t.Logf("%d cases, %d passed", len(report.Results), report.Passed())
}
