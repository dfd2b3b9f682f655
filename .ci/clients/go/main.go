// Command clientcheck drives the Go clients that oapi-codegen (client mode) and
// ogen generate from openapi.yaml against a live server, as a user of each would
// write them: a read (directories and a counterparty's card), a write (a deal
// with a goods position of 1234567890123.45) read back, and an expected failure
// (the card of a missing counterparty). Each payload is decoded into the type
// the generator made from the operation's x-value-schema.
//
// .ci/lint-clients.sh generates the clients into out/ (not in git) and runs it
// with CRM_URL, CRM_TOKEN, CRM_USER_ID and CRM_COMPANY_ID of the demo account.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"crmservice.example/clientcheck/out/oapiclient"
	"crmservice.example/clientcheck/out/ogenclient"
	openapi_types "github.com/oapi-codegen/runtime/types"
)

// amount has 15 significant digits: a 32-bit float keeps 7 of them, a 64-bit
// float all.
const amount = 1234567890123.45

// missingCompany is no counterparty of any account.
const missingCompany = 9_000_000_000_000_000_000

type config struct {
	url     string
	token   string
	user    int64
	company int64
}

func main() {
	cfg := config{url: os.Getenv("CRM_URL"), token: os.Getenv("CRM_TOKEN")}
	var err1, err2 error
	cfg.user, err1 = strconv.ParseInt(os.Getenv("CRM_USER_ID"), 10, 64)
	cfg.company, err2 = strconv.ParseInt(os.Getenv("CRM_COMPANY_ID"), 10, 64)
	if cfg.url == "" || cfg.token == "" || err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "clientcheck: set CRM_URL, CRM_TOKEN, CRM_USER_ID and CRM_COMPANY_ID")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	failed := false
	for _, c := range []struct {
		name string
		run  func(context.Context, config) error
	}{{"oapi-codegen", oapiCodegen}, {"ogen", ogen}} {
		if err := c.run(ctx, cfg); err != nil {
			fmt.Fprintf(os.Stderr, "lint-clients: the %s client: %v\n", c.name, err)
			failed = true
			continue
		}
		fmt.Printf("lint-clients: the %s client read, wrote %.2f and read it back exactly, and saw the expected failure\n", c.name, amount)
	}
	if failed {
		os.Exit(1)
	}
}

func ptr[T any](v T) *T { return &v }

// checkGoods holds the goods list read back to the one position written.
func checkGoods(positions int, price, sum float64) error {
	if positions != 1 || price != amount || sum != amount {
		return fmt.Errorf("the deal's goods read back: %d positions, price %v and sum %v; want 1 and %v", positions, price, sum, amount)
	}
	return nil
}

// checkMissing holds the reply to the card of a missing counterparty to its
// envelope: status Error (capital E), code 404, value "".
func checkMissing(status, code, text, value string) error {
	if status != "Error" || code != "404" || !strings.Contains(text, "not found") || value != "" {
		return fmt.Errorf("the card of a missing counterparty: status %q code %q error %q value %q", status, code, text, value)
	}
	return nil
}

// ---------------------------------------------------------------- oapi-codegen

func oapiCodegen(ctx context.Context, cfg config) error {
	c, err := oapiclient.NewClientWithResponses(cfg.url, oapiclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+cfg.token)
		return nil
	}))
	if err != nil {
		return err
	}
	// success returns the envelope of a successful reply.
	success := func(op string, httpResp *http.Response, env *oapiclient.Envelope, err error) (*oapiclient.Envelope, error) {
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: %w", op, err)
		case env == nil:
			return nil, fmt.Errorf("%s: HTTP %d without an envelope", op, httpResp.StatusCode)
		case env.Status != oapiclient.StatusSuccess:
			return nil, fmt.Errorf("%s: %s %v: %s", op, env.Status, env.Code, env.Error)
		}
		return env, nil
	}

	// Read: the first deal type and stage, and the card.
	first := func(code oapiclient.DirectoryGetParamsCode) (int64, error) {
		r, err := c.DirectoryGetWithResponse(ctx, code, nil)
		var env *oapiclient.Envelope
		if r != nil {
			env, err = success("directory", r.HTTPResponse, r.JSON200, err)
		}
		if err != nil {
			return 0, err
		}
		var dir oapiclient.DirectoryList
		if err := json.Unmarshal([]byte(env.Value), &dir); err != nil || len(dir) == 0 {
			return 0, fmt.Errorf("directory %d: %v %q", code, err, env.Value)
		}
		return dir[0].ID, nil
	}
	dealType, err := first(40)
	if err != nil {
		return err
	}
	stage, err := first(41)
	if err != nil {
		return err
	}
	card, err := c.CompanyGetWithResponse(ctx, &oapiclient.CompanyGetParams{Id: cfg.company})
	if err != nil {
		return err
	}
	env, err := success("companyGet", card.HTTPResponse, card.JSON200, nil)
	if err != nil {
		return err
	}
	var cc oapiclient.CompanyCard
	if err := json.Unmarshal([]byte(env.Value), &cc); err != nil {
		return fmt.Errorf("the card: %w", err)
	}
	if cc.Company.Id != cfg.company || cc.Company.Name == "" {
		return fmt.Errorf("the card of %d: id %d, name %q", cfg.company, cc.Company.Id, cc.Company.Name)
	}

	// Write: a deal with one position, its price and the deal's sum the amount.
	today := openapi_types.Date{Time: time.Now()}
	ins, err := c.DealInsertWithResponse(ctx, &oapiclient.DealInsertParams{}, oapiclient.DealInsertJSONRequestBody{
		Name: "clientcheck oapi-codegen", CompanyId: cfg.company, TypeId: dealType, StatusId: stage, UserId: cfg.user,
		DateStart: today, DateFinish: today, Sum: ptr(amount),
		Goods: &[]oapiclient.DealGoodsInput{{Discription: ptr("exactness probe"), Price: ptr(amount), Qnt: ptr(1.0)}},
	})
	if err != nil {
		return err
	}
	if env, err = success("dealInsert", ins.HTTPResponse, ins.JSON200, nil); err != nil {
		return err
	}
	var deal oapiclient.NewId
	if err := json.Unmarshal([]byte(env.Value), &deal); err != nil || deal <= 0 {
		return fmt.Errorf("dealInsert: value %q: %v", env.Value, err)
	}
	goods, err := c.DealGoodsListWithResponse(ctx, &oapiclient.DealGoodsListParams{DealId: deal})
	if err != nil {
		return err
	}
	if env, err = success("dealGoodsList", goods.HTTPResponse, goods.JSON200, nil); err != nil {
		return err
	}
	var list oapiclient.DealGoodsList
	if err := json.Unmarshal([]byte(env.Value), &list); err != nil || len(list) == 0 {
		return fmt.Errorf("dealGoodsList: value %q: %v", env.Value, err)
	}
	if err := checkGoods(len(list), list[0].Price, list[0].Sum); err != nil {
		return err
	}

	// An expected failure.
	missing, err := c.CompanyGetWithResponse(ctx, &oapiclient.CompanyGetParams{Id: missingCompany})
	if err != nil {
		return err
	}
	if missing.JSON200 == nil {
		return fmt.Errorf("the card of a missing counterparty: HTTP %d without an envelope", missing.StatusCode())
	}
	e := missing.JSON200
	code := ""
	if e.Code != nil {
		code = *e.Code
	}
	return checkMissing(string(e.Status), code, e.Error, e.Value)
}

// ---------------------------------------------------------------- ogen

type bearer string

func (b bearer) BearerAuth(context.Context, ogenclient.OperationName) (ogenclient.BearerAuth, error) {
	return ogenclient.BearerAuth{Token: string(b)}, nil
}

// ogenEnvelope is the envelope of an HTTP 200 reply of the operations used here.
func ogenEnvelope(res any, err error) (*ogenclient.Envelope, error) {
	if err != nil {
		return nil, err
	}
	switch r := res.(type) {
	case *ogenclient.Envelope:
		return r, nil
	case *ogenclient.EnvelopeHeaders:
		return &r.Response, nil
	case *ogenclient.CompanyGetOK:
		return (*ogenclient.Envelope)(r), nil
	case *ogenclient.DirectoryGetOK:
		return (*ogenclient.Envelope)(r), nil
	case *ogenclient.DealGoodsListOK:
		return (*ogenclient.Envelope)(r), nil
	}
	return nil, fmt.Errorf("a reply of type %T", res)
}

func ogenSuccess(op string, res any, err error) (*ogenclient.Envelope, error) {
	env, err := ogenEnvelope(res, err)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if env.Status != ogenclient.EnvelopeStatus_success {
		return nil, fmt.Errorf("%s: %s %v: %s", op, env.Status, env.Code, env.Error)
	}
	return env, nil
}

func ogen(ctx context.Context, cfg config) error {
	c, err := ogenclient.NewClient(cfg.url, bearer(cfg.token))
	if err != nil {
		return err
	}
	first := func(code ogenclient.DirectoryGetCode) (int64, error) {
		res, err := c.DirectoryGet(ctx, ogenclient.DirectoryGetParams{Code: code})
		env, err := ogenSuccess("directoryGet", res, err)
		if err != nil {
			return 0, err
		}
		var dir ogenclient.DirectoryList
		if err := dir.UnmarshalJSON([]byte(env.Value)); err != nil || len(dir) == 0 {
			return 0, fmt.Errorf("directory %d: %v %q", code, err, env.Value)
		}
		return dir[0].ID, nil
	}
	dealType, err := first(ogenclient.DirectoryGetCode40)
	if err != nil {
		return err
	}
	stage, err := first(ogenclient.DirectoryGetCode41)
	if err != nil {
		return err
	}
	res, err := c.CompanyGet(ctx, ogenclient.CompanyGetParams{ID: cfg.company})
	env, err := ogenSuccess("companyGet", res, err)
	if err != nil {
		return err
	}
	var card ogenclient.CompanyCard
	if err := card.UnmarshalJSON([]byte(env.Value)); err != nil {
		return fmt.Errorf("the card: %w", err)
	}
	if card.Company.ID != cfg.company || card.Company.Name == "" {
		return fmt.Errorf("the card of %d: id %d, name %q", cfg.company, card.Company.ID, card.Company.Name)
	}

	today := time.Now()
	ins, err := c.DealInsert(ctx, &ogenclient.DealInsertRequest{
		Name: "clientcheck ogen", CompanyID: cfg.company, TypeID: dealType, StatusID: stage, UserID: cfg.user,
		DateStart: today, DateFinish: today, Sum: ogenclient.NewOptFloat64(amount),
		Goods: []ogenclient.DealGoodsInput{{
			Discription: ogenclient.NewOptString("exactness probe"), Price: ogenclient.NewOptFloat64(amount), Qnt: ogenclient.NewOptFloat64(1),
		}},
	}, ogenclient.DealInsertParams{})
	if env, err = ogenSuccess("dealInsert", ins, err); err != nil {
		return err
	}
	var deal ogenclient.NewId
	if err := deal.UnmarshalJSON([]byte(env.Value)); err != nil || deal <= 0 {
		return fmt.Errorf("dealInsert: value %q: %v", env.Value, err)
	}
	goods, err := c.DealGoodsList(ctx, ogenclient.DealGoodsListParams{DealID: int64(deal)})
	if env, err = ogenSuccess("dealGoodsList", goods, err); err != nil {
		return err
	}
	var list ogenclient.DealGoodsList
	if err := list.UnmarshalJSON([]byte(env.Value)); err != nil || len(list) == 0 {
		return fmt.Errorf("dealGoodsList: value %q: %v", env.Value, err)
	}
	if err := checkGoods(len(list), list[0].Price, list[0].Sum); err != nil {
		return err
	}

	missing, err := c.CompanyGet(ctx, ogenclient.CompanyGetParams{ID: missingCompany})
	e, err := ogenEnvelope(missing, err)
	if err != nil {
		return fmt.Errorf("the card of a missing counterparty: %w", err)
	}
	if e == nil {
		return errors.New("the card of a missing counterparty: no envelope")
	}
	return checkMissing(string(e.Status), e.Code.Value, e.Error, e.Value)
}
