package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Found is a variable that Prepare found through the API.
type Found struct {
	Name, Value string
	Source      string // the request that found it, such as "GET /user/me"
}

// Setup is what Prepare learned before the first case.
type Setup struct {
	// Found are the variables found through the API, in the order the cases need them.
	Found []Found
	// Unavailable are the variables nothing set and Prepare could not find:
	// variable → what it is and how to set it (Runner.Unavailable holds only
	// the flag that sets it, which each skipped case repeats).
	Unavailable map[string]string
	// Off are the features the server has switched off (feature → why);
	// Runner.Off holds them too.
	Off map[string]string
	// Warnings say what about the tokens will make cases fail: a token owner who
	// is not an admin or lacks a KPI report right, a member token of an admin.
	Warnings []string
}

// ErrSetup wraps the errors of Prepare that keep a run from starting: the
// server does not answer, or refuses the token.
var ErrSetup = errors.New("cannot start")

// The variables the token's account provides; Prepare finds them through the
// API. Any other variable the cases use and no case saves must be given.
var (
	sampleVars = []string{"sample_document_id", "sample_company_id", "sample_deal_id"}
	// flags say which flag sets a variable; hints what it must be.
	flags = map[string]string{"member_token": "-member-token TOKEN"}
	hints = map[string]string{
		"member_token": "no operation gives a token: a token of another user of the account who is not an admin, " +
			"has no KPI report rights and no KPI plans (crm-server demo prints one as member_token; crm-server token create makes one)",
		"mail_account_id": "an active mail account of the token owner (crm-server mail-account list; crm-server mail-account create makes one)",
		"sample_goods_id": "an active item of the account's goods catalogue",
		"user_id":         "the token owner's user id",
	}
	sampleHint = "no document with goods positions that the token owner sees has a deal with a money movement of its counterparty: " +
		"set sample_document_id, sample_company_id and sample_deal_id to such a document, its counterparty and its deal"
)

// flagOf is the flag that sets a variable.
func flagOf(name string) string {
	if f := flags[name]; f != "" {
		return f
	}
	return "-var " + name + "=VALUE"
}

// Prepare runs before the cases: it checks that every server answers and
// accepts the token, asks whether each feature the cases need is switched on
// (Runner.Off), and finds through the API the variables that the cases to be
// sent use, that no case saves and that Runner.Vars does not set: the token
// owner's id, a mail account of theirs, an item of the goods catalogue and a
// sample document with its counterparty and deal. What it finds goes into
// Runner.Vars; what it cannot find into Runner.Unavailable, with the flag that
// sets it, so that the cases that need it are skipped, saying so. An error
// wrapping ErrSetup means the run cannot start. Prepare writes nothing.
func (r *Runner) Prepare(ctx context.Context, suites []Suite) (*Setup, error) {
	if r.Vars == nil {
		r.Vars = map[string]string{}
	}
	if r.Unavailable == nil {
		r.Unavailable = map[string]string{}
	}
	if r.Off == nil {
		r.Off = map[string]string{}
	}
	if r.Contract == nil {
		return nil, fmt.Errorf("%w: Runner.Contract is nil", ErrSetup)
	}
	if r.Vars["run_id"] == "" {
		r.Vars["run_id"] = newRunID()
	}
	setup := &Setup{Unavailable: map[string]string{}, Off: r.Off}
	bases := r.BaseURLs
	if len(bases) == 0 {
		bases = []string{r.BaseURL}
	}
	for _, base := range bases {
		if _, err := r.call(ctx, base, http.MethodGet, "/healthz", nil); err != nil {
			return nil, fmt.Errorf("%w: %s does not answer as the service: %v", ErrSetup, base, err)
		}
	}
	me, meSource, err := r.whoAmI(ctx, bases[0])
	if err != nil {
		return nil, err
	}

	if meSource == "GET /user/me" {
		setup.Warnings = append(setup.Warnings, checkOwner(me)...)
	}
	if member := r.Vars["member_token"]; member != "" && r.Contract.Has(http.MethodGet, "/user/me") {
		owner := *r
		owner.Token = member
		v, err := owner.call(ctx, bases[0], http.MethodGet, "/user/me", nil)
		if err != nil {
			return nil, fmt.Errorf("%w: -member-token: GET /user/me: %v", ErrSetup, err)
		}
		m, _ := v.(map[string]any)
		if m["role"] == "admin" || m["kpi_users_report"] == true || m["kpi_departments_report"] == true || fmt.Sprint(m["id"]) == fmt.Sprint(me["id"]) {
			setup.Warnings = append(setup.Warnings, "the -member-token user should be another user who is not an admin and has no KPI report "+
				"rights: the cases of access levels, which expect \"403\", will fail")
		}
	}

	features := map[string]bool{}
	for _, s := range suites {
		for _, c := range s.Cases {
			if c.Feature != "" && !(r.ReadOnly && r.Contract.Writes(c.Request.Method, c.Target())) {
				features[c.Feature] = true
			}
		}
	}
	if features["webhooks"] {
		if reason, err := r.webhooksOff(ctx, bases[0]); err != nil {
			return nil, err
		} else if reason != "" {
			r.Off["webhooks"] = reason
		}
	}

	var samples map[string]string
	var samplesFrom string
	needed := r.needed(suites)
	if i := slices.Index(needed, "sample_goods_id"); i > 0 { // first: a sample document made here needs goods
		needed = append([]string{"sample_goods_id"}, slices.Delete(needed, i, i+1)...)
	}
	for _, name := range needed {
		var value, source string
		var err error
		switch {
		case name == "user_id":
			if id, ok := me["id"].(json.Number); ok {
				value, source = id.String(), meSource
			}
		case name == "mail_account_id":
			value, source, err = r.findMailAccount(ctx, bases[0], me)
		case name == "sample_goods_id":
			value, source, err = r.findFirst(ctx, bases[0], "/common/list/paging/21?columns=id&records_onpage=1")
		case slices.Contains(sampleVars, name):
			if samples == nil {
				samples, samplesFrom, err = r.findSamples(ctx, bases[0])
				if err == nil && len(samples) == 0 && !r.ReadOnly && r.Vars["sample_goods_id"] != "" && me["id"] != nil {
					samples, err = r.createSamples(ctx, bases[0], me["id"], r.Vars["sample_goods_id"])
					samplesFrom = "created by this run"
				}
			}
			value, source = samples[name], samplesFrom
		}
		if err != nil {
			return nil, err
		}
		if value == "" {
			hint := hints[name]
			if slices.Contains(sampleVars, name) {
				hint = sampleHint
			}
			setup.Unavailable[name] = "set " + flagOf(name)
			if hint != "" {
				setup.Unavailable[name] += ": " + hint
			}
			r.Unavailable[name] = "set " + flagOf(name)
			continue
		}
		r.Vars[name] = value
		setup.Found = append(setup.Found, Found{Name: name, Value: value, Source: source})
	}
	return setup, nil
}

// needed lists the variables that the cases to be sent use, that no earlier
// case saves and that Runner.Vars does not set, in the order they are first used.
func (r *Runner) needed(suites []Suite) []string {
	saved := map[string]bool{"run_id": true}
	var out []string
	for _, s := range suites {
		for _, c := range s.Cases {
			_, off := r.Off[c.Feature]
			skip := (c.Feature != "" && off) || (r.ReadOnly && r.Contract.Writes(c.Request.Method, c.Target()))
			if !skip {
				for _, v := range c.Uses() {
					if _, set := r.Vars[v]; !set && !saved[v] && !slices.Contains(out, v) {
						out = append(out, v)
					}
				}
			}
			for v := range c.Save {
				saved[v] = true
			}
		}
	}
	return out
}

// checkOwner warns of what the cases expect of the token owner and GET /user/me
// says they lack: the admin role (additional fields, ready filters, webhooks)
// and both KPI report rights (the team KPI).
func checkOwner(me map[string]any) []string {
	var w []string
	if role, _ := me["role"].(string); role != "admin" {
		w = append(w, fmt.Sprintf("the token owner is a %s, not an admin: the cases of the operations for admins (additional fields, "+
			"ready filters, webhooks) will fail", role))
	}
	if me["kpi_users_report"] != true || me["kpi_departments_report"] != true {
		w = append(w, "the token owner lacks a KPI report right (kpi_users_report, kpi_departments_report): the cases of the team KPI will fail")
	}
	return w
}

// whoAmI reads the token owner: GET /user/me where the contract has it, else the
// user of GET /dashboard/my/day. A refused token is an ErrSetup.
func (r *Runner) whoAmI(ctx context.Context, base string) (map[string]any, string, error) {
	target, member := "/user/me", ""
	if !r.Contract.Has(http.MethodGet, target) {
		target, member = "/dashboard/my/day", "user"
	}
	v, err := r.call(ctx, base, http.MethodGet, target, nil)
	if err != nil {
		return nil, "", fmt.Errorf("%w: GET %s with the token: %v", ErrSetup, target, err)
	}
	if member != "" {
		if m, ok := v.(map[string]any); ok {
			v = m[member]
		}
	}
	me, _ := v.(map[string]any)
	if me == nil {
		return nil, "", fmt.Errorf("%w: GET %s: the value names no user", ErrSetup, target)
	}
	return me, "GET " + target, nil
}

// webhooksOff asks whether the server keeps webhook secrets, with a test
// delivery to a subscription that cannot exist: a server with CRM_SECRET_KEY
// answers "404" (or "403" to a token that is not an admin's), one without it
// HTTP 503 with a text that names the key. Nothing is written either way.
func (r *Runner) webhooksOff(ctx context.Context, base string) (string, error) {
	status, body, err := r.send(ctx, base, http.MethodPost, "/webhook/test", map[string]any{"id": json.Number("9223372036854775807")})
	if err != nil {
		return "", fmt.Errorf("%w: POST /webhook/test: %v", ErrSetup, err)
	}
	var env envelopeReply
	if status == http.StatusServiceUnavailable && json.Unmarshal(body, &env) == nil && env.Error != nil &&
		env.Code != nil && *env.Code == "503" && strings.Contains(*env.Error, "CRM_SECRET_KEY") {
		return fmt.Sprintf("POST /webhook/test answers HTTP 503 %q", *env.Error), nil
	}
	return "", nil
}

// findMailAccount finds an active mail account of the token owner through
// GET /mail/accounts, where the contract has it.
func (r *Runner) findMailAccount(ctx context.Context, base string, me map[string]any) (string, string, error) {
	const target = "/mail/accounts"
	if !r.Contract.Has(http.MethodGet, target) {
		return "", "", nil
	}
	v, err := r.call(ctx, base, http.MethodGet, target, nil)
	if err != nil {
		return "", "", fmt.Errorf("%w: GET %s: %v", ErrSetup, target, err)
	}
	list, _ := v.([]any)
	for _, e := range list {
		a, _ := e.(map[string]any)
		if a == nil || a["active"] != true || fmt.Sprint(a["user_id"]) != fmt.Sprint(me["id"]) {
			continue
		}
		if id, err := varText(a["id"]); err == nil {
			return id, "GET " + target, nil
		}
	}
	return "", "", nil
}

// findFirst reads the id of the first row of a list.
func (r *Runner) findFirst(ctx context.Context, base, target string) (string, string, error) {
	v, err := r.call(ctx, base, http.MethodPost, target, nil)
	if err != nil {
		return "", "", fmt.Errorf("%w: POST %s: %v", ErrSetup, target, err)
	}
	rows, _ := v.([]any)
	if len(rows) == 0 {
		return "", "", nil
	}
	row, _ := rows[0].(map[string]any)
	id, err := varText(row["id"])
	if err != nil {
		return "", "", nil
	}
	path, _, _ := strings.Cut(target, "?")
	return id, "POST " + path, nil
}

// findSamples looks for what the cases of documents and finance read: a money
// movement with a counterparty and a deal, and a document of that counterparty
// and deal with goods positions. It tries the first few pairs it meets.
func (r *Runner) findSamples(ctx context.Context, base string) (map[string]string, string, error) {
	const movements = "/common/list/paging/5?columns=id,company_id,deal_id&records_onpage=500"
	v, err := r.call(ctx, base, http.MethodPost, movements, nil)
	if err != nil {
		return nil, "", fmt.Errorf("%w: POST %s: %v", ErrSetup, movements, err)
	}
	rows, _ := v.([]any)
	type pair struct{ company, deal string }
	var tried []pair
	for _, e := range rows {
		row, _ := e.(map[string]any)
		company, err1 := varText(row["company_id"])
		deal, err2 := varText(row["deal_id"])
		p := pair{company, deal}
		if err1 != nil || err2 != nil || slices.Contains(tried, p) {
			continue
		}
		if len(tried) == 10 {
			break
		}
		tried = append(tried, p)
		if _, err := r.call(ctx, base, http.MethodGet, "/company/get?id="+url.QueryEscape(company), nil); err != nil {
			continue // a deleted counterparty keeps its money movements; its documents are no sample
		}
		docs, err := r.call(ctx, base, http.MethodGet, "/document/list?"+url.Values{"company_id": {company}, "deal_id": {deal}}.Encode(), nil)
		if err != nil {
			return nil, "", fmt.Errorf("%w: GET /document/list: %v", ErrSetup, err)
		}
		list, _ := docs.([]any)
		for i, d := range list {
			doc, _ := d.(map[string]any)
			id, err := varText(doc["id"])
			if err != nil || i == 5 {
				break
			}
			goods, err := r.call(ctx, base, http.MethodGet, "/document/goods/list?document_id="+url.QueryEscape(id), nil)
			if err != nil {
				return nil, "", fmt.Errorf("%w: GET /document/goods/list: %v", ErrSetup, err)
			}
			if g, _ := goods.([]any); len(g) > 0 {
				return map[string]string{"sample_document_id": id, "sample_company_id": company, "sample_deal_id": deal},
					"POST /common/list/paging/5, GET /company/get, GET /document/list, GET /document/goods/list", nil
			}
		}
	}
	return map[string]string{}, "", nil
}

// createSamples makes what the cases of documents and finance read, in an
// account that has goods but no such document: a counterparty, a deal, a
// document of both with a position of goods, and an income of the deal. They
// are named with the run_id and kept (later runs find them), and listed with
// the run's writes. It returns no samples, and no error, where the account
// lacks a directory value or a money account they need.
func (r *Runner) createSamples(ctx context.Context, base string, owner any, goods string) (map[string]string, error) {
	first := func(target, member string) (any, error) {
		v, err := r.call(ctx, base, http.MethodGet, target, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: GET %s: %v", ErrSetup, target, err)
		}
		list, _ := v.([]any)
		for _, e := range list {
			if m, _ := e.(map[string]any); m != nil && m[member] != nil && m["active"] != false {
				return m[member], nil
			}
		}
		return nil, nil
	}
	write := func(target string, body any) (any, error) {
		v, err := r.call(ctx, base, http.MethodPost, target, body)
		if err != nil {
			return nil, fmt.Errorf("%w: creating a sample: POST %s: %v", ErrSetup, target, err)
		}
		path, _, _ := strings.Cut(target, "?")
		w := Write{Operation: "POST " + path, Case: "(before the cases)", Sample: true}
		switch v := v.(type) {
		case json.Number:
			if strings.HasSuffix(path, "/insert") && path != "/document/goods/insert" { // whose value is the 1 of Done
				w.ID = v.String()
			}
		case []any:
			if len(v) > 0 {
				w.ID = fmt.Sprint(v[0])
			}
		}
		r.prepared = append(r.prepared, w)
		return v, nil
	}
	ids := map[string]any{}
	for _, dir := range []struct{ name, target, member string }{
		{"type", "/directory/9", "ID"}, {"deal type", "/directory/40", "ID"}, {"stage", "/directory/41", "ID"},
		{"document type", "/directory/44", "ID"}, {"money account", "/finance/accounts", "id"},
	} {
		v, err := first(dir.target, dir.member)
		if err != nil || v == nil {
			return map[string]string{}, err
		}
		ids[dir.name] = v
	}
	name := "Conformance sample " + r.Vars["run_id"]
	company, err := write("/company/insert", map[string]any{"name": name, "type_id": ids["type"], "user_id": owner,
		"note": "Made by crm-conformance: a sample for the cases of documents and finance"})
	if err != nil {
		return nil, err
	}
	deal, err := write("/deal/insert", map[string]any{"name": name, "company_id": company, "type_id": ids["deal type"],
		"status_id": ids["stage"], "user_id": owner, "date_start": "2026-11-01", "date_finish": "2026-12-15"})
	if err != nil {
		return nil, err
	}
	document, err := write("/document/insert", map[string]any{"company_id": company, "deal_id": deal, "type_id": ids["document type"],
		"date": "2026-11-20", "number": "S-" + r.Vars["run_id"]})
	if err != nil {
		return nil, err
	}
	if _, err := write("/document/goods/insert?"+url.Values{"document_id": {fmt.Sprint(document)}, "goods_ids": {goods}}.Encode(), nil); err != nil {
		return nil, err
	}
	if _, err := write("/finance/insert", map[string]any{"date": "2026-11-20", "direction_id": 1, "account_id": ids["money account"],
		"sum": json.Number("1"), "sum_currency": json.Number("1"), "deal_id": deal, "company_id": company, "note": name}); err != nil {
		return nil, err
	}
	return map[string]string{"sample_document_id": fmt.Sprint(document), "sample_company_id": fmt.Sprint(company),
		"sample_deal_id": fmt.Sprint(deal)}, nil
}

// call sends one request of Prepare with the token and returns the decoded
// value of a success; any other reply is an error that quotes it.
func (r *Runner) call(ctx context.Context, base, method, target string, body any) (any, error) {
	status, reply, err := r.send(ctx, base, method, target, body)
	if err != nil {
		return nil, err
	}
	var env envelopeReply
	if json.Unmarshal(reply, &env) != nil || env.Status == nil || env.Value == nil {
		return nil, fmt.Errorf("HTTP %d, not an envelope: %s", status, excerpt(reply, 200))
	}
	if status != http.StatusOK || *env.Status != StatusSuccess {
		return nil, fmt.Errorf("HTTP %d %s", status, excerpt(reply, 300))
	}
	if *env.Value == "" {
		return "", nil
	}
	return decodeJSON([]byte(*env.Value), true)
}

// send sends one request of Prepare with the token, waiting out HTTP 429 as
// the cases do, and returns the HTTP status and the body.
func (r *Runner) send(ctx context.Context, base, method, target string, body any) (int, []byte, error) {
	c := &Case{Name: "prepare", Request: Request{Method: method, Path: target, Auth: AuthToken},
		Expect: Expect{HTTPStatus: http.StatusOK}}
	rc := &resolvedCase{url: strings.TrimRight(base, "/") + target, target: target, header: http.Header{}}
	rc.header.Set("Authorization", "Bearer "+r.Token)
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rc.body, rc.hasBody = data, true
		rc.header.Set("Content-Type", "application/json")
	}
	status, _, reply, _, err := r.exchange(ctx, c, rc)
	return status, reply, err
}

// Has reports whether the contract has the operation method path (a path
// without parameters, such as /user/me).
func (c *Contract) Has(method, path string) bool {
	item := c.Doc.Paths.Value(path)
	return item != nil && item.GetOperation(strings.ToUpper(method)) != nil
}
