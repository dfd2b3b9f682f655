package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed cases/*
var embeddedCases embed.FS

// EmbeddedCases returns the case files built into the package (conformance/cases),
// so that the runner binary needs no files beside it.
func EmbeddedCases() fs.FS {
	sub, err := fs.Sub(embeddedCases, "cases")
	if err != nil { // cannot happen: "cases" is a valid path
		panic(err)
	}
	return sub
}

// InvalidToken is the bearer token sent by cases with auth: invalid; no server
// issues it (a token of this server names its account and ends in a checksum).
const InvalidToken = "crm_conformance-invalid-token"

// maxReply caps the reply bodies read, so that a broken server cannot exhaust memory.
const maxReply = 32 << 20

// Runner replays cases against a running server and validates every reply.
type Runner struct {
	BaseURL string // such as http://localhost:8080; a path prefix is kept
	// BaseURLs, when set, are several servers of one deployment: the cases go to
	// them in turn, the first case to the first (BaseURL is then not used).
	BaseURLs []string
	Token    string // the bearer token of auth: token
	// Vars are the variables known before the first case (-var name=value).
	// run_id is added when missing: a random string, new for each run, that
	// cases use to make names and e-mails unique.
	Vars     map[string]string
	Contract *Contract
	Client   *http.Client // nil: a client with a 60 s timeout that does not follow redirects
	// Progress, when not nil, is called with each result as soon as its case has run.
	Progress func(Result)

	sent int // cases sent, to spread them over BaseURLs
}

// Result is the outcome of one case.
type Result struct {
	Suite, Case string
	Description string
	Pass        bool
	Problems    []string      // why the case failed, one item per problem
	Request     string        // method and target, such as "GET /company/get?id=1001"
	RequestBody string        // the start of the request body
	HTTPStatus  int           // 0 when no reply came
	Body        string        // the start of the reply body
	Duration    time.Duration // of the exchange, retries included
	Retries     int           // requests repeated after an unexpected HTTP 429
	Unchecked   string        // the reason when the reply was not checked against an operation
}

// Name is the full name of the case: suite/case, as -run matches it.
func (r Result) Name() string { return r.Suite + "/" + r.Case }

// Reason joins the problems of a failed case into one line.
func (r Result) Reason() string { return strings.Join(r.Problems, "; ") }

// Report is the outcome of a run.
type Report struct {
	RunID    string
	Results  []Result
	Duration time.Duration
	// Interrupted reports that the context ended the run before its last case.
	Interrupted bool
}

// Failed counts the failed cases.
func (r Report) Failed() int {
	n := 0
	for _, res := range r.Results {
		if !res.Pass {
			n++
		}
	}
	return n
}

// Passed counts the passed cases.
func (r Report) Passed() int { return len(r.Results) - r.Failed() }

// Select keeps the cases whose full name (suite/case) matches re, together with
// the earlier cases that save a variable they use (and so on), so that a
// filtered run still has its variables. Suites left without cases are dropped.
func Select(suites []Suite, re *regexp.Regexp) []Suite {
	type ref struct{ s, c int }
	var all []ref
	for si, s := range suites {
		for ci := range s.Cases {
			all = append(all, ref{si, ci})
		}
	}
	keep := make([]bool, len(all))
	for i := len(all) - 1; i >= 0; i-- {
		s := suites[all[i].s]
		c := &s.Cases[all[i].c]
		if !keep[i] && !re.MatchString(s.Name+"/"+c.Name) {
			continue
		}
		keep[i] = true
		for _, v := range c.Uses() {
			for j := i - 1; j >= 0; j-- {
				if _, saves := suites[all[j].s].Cases[all[j].c].Save[v]; saves {
					keep[j] = true
					break
				}
			}
		}
	}
	var out []Suite
	for i, r := range all {
		if !keep[i] {
			continue
		}
		if len(out) == 0 || out[len(out)-1].File != suites[r.s].File {
			s := suites[r.s]
			out = append(out, Suite{Name: s.Name, File: s.File})
		}
		last := &out[len(out)-1]
		last.Cases = append(last.Cases, suites[r.s].Cases[r.c])
	}
	return out
}

// Run replays the suites in order against the server and reports every case. A
// failed case never stops the later ones; a later case that needs a variable the
// failed case would have saved fails with "variable X not set". Only the end of
// ctx stops a run early.
func (r *Runner) Run(ctx context.Context, suites []Suite) Report {
	start := time.Now()
	vars := maps.Clone(r.Vars)
	if vars == nil {
		vars = map[string]string{}
	}
	if vars["run_id"] == "" {
		vars["run_id"] = newRunID()
	}
	rep := Report{RunID: vars["run_id"]}
	savedBy := map[string]bool{} // variables some case of the run saves
	for _, s := range suites {
		for _, c := range s.Cases {
			for v := range c.Save {
				savedBy[v] = true
			}
		}
	}
	failedSaver := map[string]string{} // variable → the failed case that should have saved it
	explain := func(name string) string {
		switch {
		case failedSaver[name] != "":
			return fmt.Sprintf("variable %s not set: case %s, which saves it, failed", name, failedSaver[name])
		case savedBy[name]:
			return fmt.Sprintf("variable %s not set: no case before this one saved it", name)
		default:
			return fmt.Sprintf("variable %s not set: pass it with -var %s=VALUE", name, name)
		}
	}
	for _, s := range suites {
		for _, c := range s.Cases {
			if ctx.Err() != nil {
				rep.Interrupted = true
				rep.Duration = time.Since(start)
				return rep
			}
			res := r.runCase(ctx, s.Name, &c, vars, explain)
			if !res.Pass {
				for v := range c.Save {
					if _, set := vars[v]; !set {
						failedSaver[v] = res.Name()
					}
				}
			}
			rep.Results = append(rep.Results, res)
			if r.Progress != nil {
				r.Progress(res)
			}
		}
	}
	rep.Duration = time.Since(start)
	return rep
}

func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// runCase sends the request of one case and checks the reply; on success it
// saves the case's variables into vars. explain words the failure of a case
// whose variable is not set.
func (r *Runner) runCase(ctx context.Context, suite string, c *Case, vars map[string]string, explain func(string) string) Result {
	res := Result{Suite: suite, Case: c.Name, Description: c.Description}
	if c.Unchecked {
		res.Unchecked = c.UncheckedReason
	}
	fail := func(format string, args ...any) Result {
		res.Problems = append(res.Problems, fmt.Sprintf(format, args...))
		return res
	}
	if r.Contract == nil {
		return fail("Runner.Contract is nil: nothing to check the replies against")
	}
	rc, err := resolve(c, r.nextBaseURL(), r.Token, vars)
	if err != nil {
		var missing *missingVarError
		if errors.As(err, &missing) {
			return fail("%s", explain(missing.name))
		}
		return fail("%v", err)
	}
	res.Request = c.Request.Method + " " + rc.target
	res.RequestBody = excerpt(rc.body, 300)

	start := time.Now()
	status, header, body, retries, err := r.exchange(ctx, c, rc)
	res.Duration, res.Retries = time.Since(start), retries
	if err != nil {
		return fail("%v", err)
	}
	res.HTTPStatus, res.Body = status, excerpt(body, 600)

	value, problems := r.verify(c, rc, status, header, body)
	res.Problems = problems
	if len(problems) > 0 {
		return res
	}
	if c.Expect.WalkPages {
		if err := r.walkPages(ctx, c, rc, body); err != nil {
			return fail("walking the pages: %v", err)
		}
	}
	for name, p := range c.Save {
		v, err := atPath(value, p)
		if err == nil {
			var text string
			if text, err = varText(v); err == nil {
				vars[name] = text
				continue
			}
		}
		res.Problems = append(res.Problems, fmt.Sprintf("save %s from %q: %v", name, p, err))
	}
	res.Pass = len(res.Problems) == 0
	return res
}

// walkPages requests pages 2, 3, ... of a paged list whose first page is first,
// and checks that each reply matches the contract and that the pages together
// hold rows records, none twice.
func (r *Runner) walkPages(ctx context.Context, c *Case, rc *resolvedCase, first []byte) error {
	var env struct {
		Rows, Pages, Page int
		Value             string
	}
	seen := map[string]bool{}
	body := first
	for page := 1; ; page++ {
		if err := json.Unmarshal(body, &env); err != nil {
			return fmt.Errorf("page %d: %w", page, err)
		}
		if env.Page != page {
			return fmt.Errorf("page %d answered page %d", page, env.Page)
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(env.Value), &rows); err != nil {
			return fmt.Errorf("page %d: value is not an array of objects: %w", page, err)
		}
		for _, row := range rows {
			id := fmt.Sprint(row["id"])
			if row["id"] == nil || seen[id] {
				return fmt.Errorf("page %d: id %s missing or seen on an earlier page", page, id)
			}
			seen[id] = true
		}
		if page >= env.Pages {
			break
		}
		next := *rc
		u, err := url.Parse(rc.url)
		if err != nil {
			return err
		}
		q := u.Query()
		q.Set("page", strconv.Itoa(page+1))
		u.RawQuery = q.Encode()
		next.url, next.target = u.String(), u.RequestURI()
		status, header, reply, _, err := r.exchange(ctx, c, &next)
		if err != nil {
			return fmt.Errorf("page %d: %w", page+1, err)
		}
		if err := r.Contract.Check(c.Request.Method, next.target, status, header, reply); err != nil {
			return fmt.Errorf("page %d: %w", page+1, err)
		}
		body = reply
	}
	if len(seen) != env.Rows {
		return fmt.Errorf("the pages hold %d records, rows says %d", len(seen), env.Rows)
	}
	return nil
}

// resolvedCase is a case with its placeholders replaced: what to send and what to expect.
type resolvedCase struct {
	url, target   string
	header        http.Header
	body          []byte
	hasBody       bool
	value         *string
	errorContains string
	valueJSON     any
	contains      map[string][]any
	headers       map[string]string
}

func resolve(c *Case, baseURL, token string, vars map[string]string) (*resolvedCase, error) {
	rc := &resolvedCase{header: http.Header{}}
	rq := &c.Request
	p, err := expandText(rq.Path, vars)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	for k, v := range rq.Query {
		if v, err = expandText(v, vars); err != nil {
			return nil, err
		}
		q.Set(k, v)
	}
	rc.target = (&url.URL{Path: p, RawQuery: q.Encode()}).RequestURI()
	rc.url = strings.TrimRight(baseURL, "/") + rc.target

	switch rq.Auth {
	case AuthToken:
		rc.header.Set("Authorization", "Bearer "+token)
	case AuthInvalid:
		rc.header.Set("Authorization", "Bearer "+InvalidToken)
	}
	switch {
	case rq.HasBody:
		body, err := expandJSON(rq.Body, vars)
		if err != nil {
			return nil, err
		}
		if rc.body, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("encode request.body: %w", err)
		}
		rc.hasBody = true
	case rq.RawBody != nil:
		s, err := expandText(*rq.RawBody, vars)
		if err != nil {
			return nil, err
		}
		rc.body, rc.hasBody = []byte(s), true
	}
	if rq.BodySize > len(rc.body) {
		rc.body = append(rc.body, bytes.Repeat([]byte{' '}, rq.BodySize-len(rc.body))...)
		rc.hasBody = true
	}
	if rc.hasBody {
		rc.header.Set("Content-Type", "application/json")
	}
	for k, v := range rq.Headers {
		if v, err = expandText(v, vars); err != nil {
			return nil, err
		}
		rc.header.Set(k, v)
	}

	ex := &c.Expect
	if ex.Value != nil {
		v, err := expandText(*ex.Value, vars)
		if err != nil {
			return nil, err
		}
		rc.value = &v
	}
	if rc.errorContains, err = expandText(ex.ErrorContains, vars); err != nil {
		return nil, err
	}
	if ex.HasValueJSON {
		if rc.valueJSON, err = expandJSON(ex.ValueJSON, vars); err != nil {
			return nil, err
		}
	}
	if len(ex.ValueJSONContains) > 0 {
		rc.contains = map[string][]any{}
		for p, elems := range ex.ValueJSONContains {
			x, err := expandJSON(elems, vars)
			if err != nil {
				return nil, err
			}
			rc.contains[p] = x.([]any)
		}
	}
	if len(ex.Headers) > 0 {
		rc.headers = map[string]string{}
		for k, v := range ex.Headers {
			if rc.headers[k], err = expandText(v, vars); err != nil {
				return nil, err
			}
		}
	}
	return rc, nil
}

// exchange sends the request and reads the reply. An HTTP 429 that the case does
// not expect is waited out (Retry-After, at most 10 s) and retried up to 3 times:
// the rate limit of the token, not the operation, answered.
func (r *Runner) exchange(ctx context.Context, c *Case, rc *resolvedCase) (int, http.Header, []byte, int, error) {
	client := r.Client
	if client == nil {
		client = &http.Client{
			Timeout:       60 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	for retries := 0; ; retries++ {
		var body io.Reader
		if rc.hasBody {
			body = bytes.NewReader(rc.body)
		}
		req, err := http.NewRequestWithContext(ctx, c.Request.Method, rc.url, body)
		if err != nil {
			return 0, nil, nil, retries, fmt.Errorf("build the request: %w", err)
		}
		req.Header = rc.header.Clone()
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, nil, retries, fmt.Errorf("send: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
		resp.Body.Close()
		if err != nil {
			return resp.StatusCode, resp.Header, data, retries, fmt.Errorf("read the reply: %w", err)
		}
		if resp.StatusCode != http.StatusTooManyRequests || c.Expect.HTTPStatus == http.StatusTooManyRequests || retries == 3 {
			return resp.StatusCode, resp.Header, data, retries, nil
		}
		wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || wait < 1 {
			wait = 1
		}
		select {
		case <-ctx.Done():
			return 0, nil, nil, retries, fmt.Errorf("waiting out HTTP 429: %w", ctx.Err())
		case <-time.After(time.Duration(min(wait, 10)) * time.Second):
		}
	}
}

// verify checks a reply against the contract, the conventions and the case's
// expectations; it returns the decoded value (for save) and the problems found.
func (r *Runner) verify(c *Case, rc *resolvedCase, status int, header http.Header, body []byte) (any, []string) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	method := c.Request.Method

	if c.Expect.NoBody {
		return nil, r.verifyNoBody(c, rc, status, header, body)
	}
	if c.Unchecked {
		if err := r.Contract.CheckEnvelope(body); err != nil {
			bad("contract: %v", err)
		}
	} else if err := r.Contract.Check(method, rc.target, status, header, body); err != nil {
		if errors.Is(err, ErrNoOperation) {
			bad("contract: %v (mark the case unchecked if it tests an unknown path or method)", err)
		} else {
			bad("contract: %v", err)
		}
	}
	if err := r.Contract.CheckConventions(method, rc.target, status, header, body); err != nil {
		bad("conventions: %v", err)
	}

	ex := &c.Expect
	if status != ex.HTTPStatus {
		bad("HTTP status: want %d, got %d", ex.HTTPStatus, status)
	}
	for k, want := range rc.headers {
		got, ok := header[http.CanonicalHeaderKey(k)]
		if !ok || !strings.Contains(strings.Join(got, ", "), want) {
			bad("header %s: want a value containing %q, got %q", k, want, strings.Join(got, ", "))
		}
	}
	var env envelopeReply
	if err := json.Unmarshal(body, &env); err != nil || env.Status == nil || env.Value == nil {
		bad("the reply is not an envelope")
		return nil, problems
	}
	if *env.Status != ex.Status {
		bad("status: want %q, got %q", ex.Status, *env.Status)
	}
	wantCode := ex.Code
	if ex.CodeSet || ex.Status == StatusSuccess {
		if (wantCode == nil) != (env.Code == nil) || (wantCode != nil && *wantCode != *env.Code) {
			bad("code: want %s, got %s", quoteOrNull(wantCode), quoteOrNull(env.Code))
		}
	}
	if rc.errorContains != "" && (env.Error == nil || !strings.Contains(*env.Error, rc.errorContains)) {
		bad("error: want a text containing %q, got %s", rc.errorContains, quoteOrNull(env.Error))
	}
	for _, f := range []struct {
		name      string
		want, got *int64
	}{{"rows", toInt64(ex.Rows), env.Rows}, {"pages", toInt64(ex.Pages), env.Pages}, {"page", toInt64(ex.Page), env.Page}} {
		if f.want != nil && (f.got == nil || *f.got != *f.want) {
			bad("%s: want %d, got %s", f.name, *f.want, intOrNull(f.got))
		}
	}
	if rc.value != nil && *env.Value != *rc.value {
		bad("value: want %q, got %q", *rc.value, excerpt([]byte(*env.Value), 300))
	}

	var value any = ""
	if *env.Value != "" {
		v, err := decodeJSON([]byte(*env.Value), true)
		switch {
		case err == nil:
			value = v
		case ex.HasValueJSON || len(rc.contains) > 0 || ex.QuickList || len(c.Save) > 0:
			bad("value: %v", err)
			return nil, problems
		default:
			value = *env.Value
		}
	}
	if ex.QuickList {
		if err := checkQuickList(value, env); err != nil {
			bad("%v", err)
		}
	}
	if ex.HasValueJSON {
		if err := matchJSON(rc.valueJSON, value, "value"); err != nil {
			bad("value_json: %v", err)
		}
	}
	paths := slices.Sorted(maps.Keys(rc.contains))
	for _, p := range paths {
		arr, err := atPath(value, p)
		if err != nil {
			bad("value_json_contains %s: %v", p, err)
			continue
		}
		for _, want := range rc.contains[p] {
			if err := containsJSON(want, arr, "value at "+p); err != nil {
				bad("value_json_contains: %v", err)
			}
		}
	}
	return value, problems
}

// verifyNoBody checks a reply that has no body: the contract (unless the case
// is unchecked), the request id every reply carries, the status and headers.
func (r *Runner) verifyNoBody(c *Case, rc *resolvedCase, status int, header http.Header, body []byte) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if !c.Unchecked {
		if err := r.Contract.Check(c.Request.Method, rc.target, status, header, body); err != nil {
			bad("contract: %v", err)
		}
	}
	if err := checkRequestID(header); err != nil {
		bad("conventions: %v", err)
	}
	if len(body) > 0 {
		bad("want no body, got %d bytes: %s", len(body), excerpt(body, 100))
	}
	if status != c.Expect.HTTPStatus {
		bad("HTTP status: want %d, got %d", c.Expect.HTTPStatus, status)
	}
	for k, want := range rc.headers {
		got, ok := header[http.CanonicalHeaderKey(k)]
		if !ok || !strings.Contains(strings.Join(got, ", "), want) {
			bad("header %s: want a value containing %q, got %q", k, want, strings.Join(got, ", "))
		}
	}
	return problems
}

// checkQuickList checks the paging fields of a list without paging.
func checkQuickList(value any, env envelopeReply) error {
	arr, ok := value.([]any)
	if !ok {
		return fmt.Errorf("quick_list: the value is %s, not an array", kindOf(value))
	}
	n := int64(len(arr))
	want := [3]int64{n, 1, 1}
	if n == 0 {
		want = [3]int64{0, 0, 0}
	}
	got := [3]*int64{env.Rows, env.Pages, env.Page}
	for i, name := range []string{"rows", "pages", "page"} {
		if got[i] == nil || *got[i] != want[i] {
			return fmt.Errorf("quick_list: a list of %d records has rows, pages, page = %d, %d, %d; got %s %s", n,
				want[0], want[1], want[2], name, intOrNull(got[i]))
		}
	}
	return nil
}

func toInt64(p *int) *int64 {
	if p == nil {
		return nil
	}
	v := int64(*p)
	return &v
}

func intOrNull(p *int64) string {
	if p == nil {
		return "null"
	}
	return strconv.FormatInt(*p, 10)
}

// nextBaseURL is the server the next case goes to.
func (r *Runner) nextBaseURL() string {
	if len(r.BaseURLs) == 0 {
		return r.BaseURL
	}
	u := r.BaseURLs[r.sent%len(r.BaseURLs)]
	r.sent++
	return u
}
