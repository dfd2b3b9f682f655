package crm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/crmservice/crm/sdk/go/crm"
)

// Example starts a client, reads a counterparty's card and tells a missing one
// from other failures. (A stand-in server answers here as the service would.)
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("id") != "1001" {
			io.WriteString(w, `{"status":"Error","error":"counterparty 7 not found","code":"404","rows":0,"pages":0,"page":0,"value":""}`)
			return
		}
		io.WriteString(w, `{"status":"success","error":"","code":null,"rows":0,"pages":0,"page":0,`+
			`"value":"{\"company\":{\"id\":1001,\"name\":\"Contoso\"},\"emails\":[],\"phones\":[],\"requisites\":[],\"contacts\":[]}"}`)
	}))
	defer srv.Close()

	ctx := context.Background()
	c, err := crm.New(srv.URL, "your token") // the token of `crm-server token create`
	if err != nil {
		panic(err)
	}
	card, err := c.CompanyGet(ctx, 1001)
	if err != nil {
		panic(err)
	}
	fmt.Println(card.Company.Id, card.Company.Name)

	_, err = c.CompanyGet(ctx, 7)
	var e *crm.Error
	if errors.As(err, &e) && e.Code == "404" {
		fmt.Println("missing:", e.Message)
	}
	// Output:
	// 1001 Contoso
	// missing: counterparty 7 not found
}
