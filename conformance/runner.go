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
	// ReadOnly skips, saying so, every case whose request may write
	// (Contract.Writes), so that the run changes nothing on the server.
	ReadOnly bool
	// Off names the features (of Features) that the deployment has switched
	// off, each with the reason; the cases that need one are skipped.
	Off map[string]string
	// Unavailable names the variables that nothing set and discovery did not
	// find, each with how to set it; the cases that use one are skipped.
	Unavailable map[string]string

	sent     int     // cases sent, to spread them over BaseURLs
	prepared []Write // what Prepare wrote, reported with the run's writes
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
	// Skipped reports a case that was not sent, for the reason in SkipReason
	// (read-only run, a feature switched off, a variable not available); it
	// neither passes nor fails.
	Skipped    bool
	SkipReason string
}

// Status is "passed", "failed" or "skipped".
func (r Result) Status() string {
	switch {
	case r.Skipped:
		return "skipped"
	case r.Pass:
		return "passed"
	}
	return "failed"
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
	// Writes are the successful writes of the run, in order: the records it
	// created and the records it changed.
	Writes []Write
}

// Write is one successful write of a run: a case whose operation writes
// (Contract.Writes) and whose reply was a success.
type Write struct {
	Operation string // such as "POST /company/insert"
	Case      string // suite/case
	// ID is the record created, when the operation inserts and its value names
	// one (a money movement and its transfer: "12+13"), or the record deleted.
	ID string
	// Removed says how a created record was removed again ("" while it is
	// kept): by a later case, or by Runner.Cleanup.
	Removed string
	// Sample marks a record that Prepare made for the cases to read, which
	// Cleanup keeps for later runs to find.
	Sample bool
}

func (r Report) count(status string) int {
	n := 0
	for _, res := range r.Results {
		if res.Status() == status {
			n++
		}
	}
	return n
}

// Failed counts the failed cases.
func (r Report) Failed() int { return r.count("failed") }

// Passed counts the passed cases.
func (r Report) Passed() int { return r.count("passed") }

// Skipped counts the skipped cases.
func (r Report) Skipped() int { return r.count("skipped") }

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
		for _, a := range c.After {
			for j := i - 1; j >= 0; j-- {
				if all[j].s == all[i].s && suites[all[j].s].Cases[all[j].c].Name == a {
					keep[j] = true
					break
				}
			}
		}
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
	rep := Report{RunID: vars["run_id"], Writes: slices.Clone(r.prepared)}
	savedBy := map[string]bool{} // variables some case of the run saves
	for _, s := range suites {
		for _, c := range s.Cases {
			for v := range c.Save {
				savedBy[v] = true
			}
		}
	}
	failedSaver := map[string]string{}      // variable → the failed case that should have saved it
	skippedSaver := map[string]string{}     // variable → the skipped case that would have saved it
	skipped := map[string]map[string]bool{} // suite → its skipped cases
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
			var res Result
			if reason := r.skipReason(&c, vars, skippedSaver, skipped[s.Name]); reason != "" {
				res = Result{Suite: s.Name, Case: c.Name, Description: c.Description, Skipped: true, SkipReason: reason}
			} else {
				var w *Write
				res, w = r.runCase(ctx, s.Name, &c, vars, explain)
				if w != nil {
					rep.noteWrite(*w)
				}
			}
			if res.Skipped {
				if skipped[s.Name] == nil {
					skipped[s.Name] = map[string]bool{}
				}
				skipped[s.Name][c.Name] = true
			}
			if !res.Pass {
				for v := range c.Save {
					if _, set := vars[v]; !set {
						if res.Skipped {
							skippedSaver[v] = res.Name()
						} else {
							failedSaver[v] = res.Name()
						}
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

// skipReason says why case c is not to be sent, or "" when it is: a read-only
// run and a request that may write, a feature the deployment has switched off,
// a variable that is not available, or an earlier case of After that was
// skipped (skipped holds the skipped cases of c's file).
func (r *Runner) skipReason(c *Case, vars map[string]string, skippedSaver map[string]string, skipped map[string]bool) string {
	if reason, off := r.Off[c.Feature]; off && c.Feature != "" {
		return fmt.Sprintf("feature %s is switched off on this server: %s", c.Feature, reason)
	}
	if r.ReadOnly && r.Contract != nil && r.Contract.Writes(c.Request.Method, c.Target()) {
		return fmt.Sprintf("read-only run: %s %s writes", c.Request.Method, c.Request.Path)
	}
	for _, a := range c.After {
		if skipped[a] {
			return fmt.Sprintf("it reads what case %s writes, which was skipped", a)
		}
	}
	for _, v := range c.Uses() {
		if _, set := vars[v]; set {
			continue
		}
		if how, ok := r.Unavailable[v]; ok {
			return fmt.Sprintf("variable %s is not available: %s", v, how)
		}
		if by := skippedSaver[v]; by != "" {
			return fmt.Sprintf("variable %s is not set: case %s, which saves it, was skipped", v, by)
		}
	}
	return ""
}

// Target is the case's request target (path and query) with every placeholder
// replaced by 1: enough to find its operation before its variables are known.
func (c *Case) Target() string {
	p := placeholder.ReplaceAllString(c.Request.Path, "1")
	q := url.Values{}
	for k, v := range c.Request.Query {
		q.Set(k, placeholder.ReplaceAllString(v, "1"))
	}
	return (&url.URL{Path: p, RawQuery: q.Encode()}).RequestURI()
}

// deleteOf maps an operation that inserts a record to the operation that
// removes it again, for Runner.Cleanup.
var deleteOf = map[string]string{
	"POST /company/insert": "POST /company/delete",
	"POST /webhook/insert": "POST /webhook/delete",
	"POST /field/insert":   "POST /field/delete",
	"POST /filter/insert":  "POST /filter/delete",
}

// noteWrite adds a write to the report; a delete marks the record it removes.
func (rep *Report) noteWrite(w Write) {
	for ins, del := range deleteOf {
		if w.Operation != del || w.ID == "" {
			continue
		}
		for i := range rep.Writes {
			if rep.Writes[i].Operation == ins && rep.Writes[i].ID == w.ID && rep.Writes[i].Removed == "" {
				rep.Writes[i].Removed = "by case " + w.Case
			}
		}
		w.ID = "" // the id names the record deleted, not one created
	}
	rep.Writes = append(rep.Writes, w)
}

// Kept lists the records the run created that are still there.
func (rep *Report) Kept() []Write {
	var out []Write
	for _, w := range rep.Writes {
		if w.ID != "" && w.Removed == "" {
			out = append(out, w)
		}
	}
	return out
}

// Cleanup removes the records the run created and left, where the contract has
// an operation that removes them (counterparties, webhooks, additional fields,
// ready filters), and marks them in rep. It returns the problems met, one per
// record it could not remove; the other records stay as they are.
func (r *Runner) Cleanup(ctx context.Context, rep *Report) []string {
	var problems []string
	for i := range rep.Writes {
		w := &rep.Writes[i]
		del, ok := deleteOf[w.Operation]
		if w.ID == "" || w.Removed != "" || w.Sample || !ok {
			continue
		}
		if !integerText.MatchString(w.ID) {
			continue
		}
		method, path, _ := strings.Cut(del, " ")
		c := &Case{Name: "cleanup", Request: Request{Method: method, Path: path, Auth: AuthToken, HasBody: true,
			Body: map[string]any{"id": json.Number(w.ID)}}, Expect: Expect{HTTPStatus: 200, Status: StatusSuccess}}
		rc, err := resolve(c, r.nextBaseURL(), r.Token, nil)
		if err == nil {
			var status int
			var body []byte
			status, _, body, _, err = r.exchange(ctx, c, rc)
			var env envelopeReply
			if err == nil && (status != http.StatusOK || json.Unmarshal(body, &env) != nil || env.Status == nil || *env.Status != StatusSuccess) {
				err = fmt.Errorf("HTTP %d %s", status, excerpt(body, 200))
			}
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %s: %v", del, w.ID, err))
			continue
		}
		w.Removed = "by the cleanup (" + del + ")"
	}
	return problems
}

func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// runCase sends the request of one case and checks the reply; on success it
// saves the case's variables into vars. explain words the failure of a case
// whose variable is not set.
func (r *Runner) runCase(ctx context.Context, suite string, c *Case, vars map[string]string, explain func(string) string) (Result, *Write) {
	res := Result{Suite: suite, Case: c.Name, Description: c.Description}
	var w *Write
	if c.Unchecked {
		res.Unchecked = c.UncheckedReason
	}
	fail := func(format string, args ...any) (Result, *Write) {
		res.Problems = append(res.Problems, fmt.Sprintf(format, args...))
		return res, w
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
	w = r.writeOf(c, rc, res.Name(), body)

	value, problems := r.verify(c, rc, status, header, body)
	res.Problems = problems
	if len(problems) > 0 {
		return res, w
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
	return res, w
}

// writeOf is the write a reply reports, or nil: a success of an operation
// that writes. The id of an insert comes from the value (the value itself, or
// its member id); the id of a delete from the request body's id.
func (r *Runner) writeOf(c *Case, rc *resolvedCase, name string, body []byte) *Write {
	if r.Contract == nil || !r.Contract.Writes(c.Request.Method, rc.target) {
		return nil
	}
	var env envelopeReply
	if json.Unmarshal(body, &env) != nil || env.Status == nil || *env.Status != StatusSuccess || env.Value == nil {
		return nil
	}
	path, _, _ := strings.Cut(rc.target, "?")
	w := &Write{Operation: c.Request.Method + " " + path, Case: name}
	var from any
	switch {
	case strings.HasSuffix(path, "/insert") && !r.Contract.valueIsDone(c.Request.Method, rc.target):
		from, _ = decodeJSON([]byte(*env.Value), true)
	case strings.HasSuffix(path, "/delete"):
		from, _ = decodeJSON(rc.body, true)
	}
	var ids []string
	switch v := from.(type) {
	case map[string]any: // {"id": …} of a webhook, {"NEW_ID": …} of a contact person, a delete's body
		if v["id"] != nil {
			from = v["id"]
		} else {
			from = v["NEW_ID"]
		}
	case []any: // the ids of a money movement and its transfer
		for _, e := range v {
			if id, err := varText(e); err == nil && integerText.MatchString(id) {
				ids = append(ids, id)
			}
		}
		w.ID = strings.Join(ids, "+")
		return w
	}
	if id, err := varText(from); err == nil && integerText.MatchString(id) {
		w.ID = id
	}
	return w
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
