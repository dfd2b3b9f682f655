package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"math/big"
	"path"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Suite is the ordered list of cases of one case file.
type Suite struct {
	Name  string // the file name without its extension
	File  string // the file name
	Cases []Case
}

// Case is one documented exchange: a request and the envelope expected back.
type Case struct {
	Name        string
	Description string
	Request     Request
	Expect      Expect
	// Save names variables to set from the decoded value of a passing reply:
	// variable name → path into the value ("." for the whole value).
	Save map[string]string
	// Unchecked marks a reply that no operation of the contract describes (an
	// unknown path or method); it is then validated against the Envelope schema
	// and the conventions only, never with Contract.Check.
	Unchecked       bool
	UncheckedReason string
	// Feature names a feature that a deployment may switch off (one of
	// Features); when the runner is told it is off, the case is skipped.
	Feature string
	// After names earlier cases of the same file whose writes this case reads
	// without a variable to show it; when one of them is skipped, so is this case.
	After []string
}

// Features are the features a deployment may switch off, with what switches
// them off. A case that needs one says so with feature: NAME.
var Features = map[string]string{
	"webhooks": "the webhook operations that keep a secret need the server's CRM_SECRET_KEY; without it they answer HTTP 503",
}

// Request is the request of a case. Every string in it may hold {{var}} placeholders.
type Request struct {
	Method  string
	Path    string
	Query   map[string]string
	Headers map[string]string
	Auth    string // AuthToken, AuthNone or AuthInvalid
	// HasBody reports whether Body was given; Body is then a JSON value (nil is
	// the JSON literal null) and is sent encoded as JSON.
	HasBody bool
	Body    any
	// RawBody, when not nil, is sent exactly as written (after substitution).
	RawBody *string
	// BodySize, when positive, pads the body with trailing spaces (JSON
	// whitespace, so a valid JSON body stays valid) to this many bytes.
	BodySize int
}

// The values of Request.Auth.
const (
	AuthToken   = "token"   // Authorization: Bearer <Runner.Token>
	AuthNone    = "none"    // no Authorization header
	AuthInvalid = "invalid" // a well-formed bearer token that no server issued
)

// Expect is what a case expects of the reply.
type Expect struct {
	HTTPStatus int    // 200 unless given
	Status     string // success (default), error or Error
	// CodeSet reports whether code was given; Code is then nil for null. When it
	// is not given a success expects null (an error case must give it).
	CodeSet bool
	Code    *string
	// Value, when not nil, is the exact expected envelope value.
	Value *string
	// HasValueJSON reports whether ValueJSON was given: a JSON value the decoded
	// value must match (objects as subsets, arrays element by element).
	HasValueJSON bool
	ValueJSON    any
	// ValueJSONContains maps a path into the decoded value to elements that must
	// each match at least one element of the array found there.
	ValueJSONContains map[string][]any
	ErrorContains     string
	Rows, Pages, Page *int
	// QuickList checks the paging fields of a list without paging: rows is the
	// length of the value array, pages and page are 1 (0 and 0 when it is empty).
	QuickList bool
	// WalkPages requests every following page of a paged list (the same query with
	// page = 2, 3, ...): each reply must match the contract, and together the pages
	// must hold `rows` records with no id twice.
	WalkPages bool
	// Headers maps a reply header to a text its value must contain ("" only
	// requires the header to be present).
	Headers map[string]string
	// NoBody expects a reply without a body (304 Not Modified, the 204 of a
	// CORS preflight): none of the envelope's expectations apply to it.
	NoBody bool
}

// The values of Expect.Status.
const (
	StatusSuccess    = "success"
	StatusError      = "error"
	StatusErrorUpper = "Error"
)

type rawCase struct {
	Name            string            `yaml:"name"`
	Description     string            `yaml:"description"`
	Request         rawRequest        `yaml:"request"`
	Expect          rawExpect         `yaml:"expect"`
	Save            map[string]string `yaml:"save"`
	Unchecked       bool              `yaml:"unchecked"`
	UncheckedReason string            `yaml:"unchecked_reason"`
	Feature         string            `yaml:"feature"`
	After           []string          `yaml:"after"`
}

type rawRequest struct {
	Method   string            `yaml:"method"`
	Path     string            `yaml:"path"`
	Query    map[string]string `yaml:"query"`
	Headers  map[string]string `yaml:"headers"`
	Auth     string            `yaml:"auth"`
	Body     yaml.Node         `yaml:"body"`
	RawBody  *string           `yaml:"raw_body"`
	BodySize int               `yaml:"body_size"`
}

type rawExpect struct {
	HTTPStatus        int                  `yaml:"http_status"`
	Status            string               `yaml:"status"`
	Code              yaml.Node            `yaml:"code"`
	Value             *string              `yaml:"value"`
	ValueJSON         yaml.Node            `yaml:"value_json"`
	ValueJSONContains map[string]yaml.Node `yaml:"value_json_contains"`
	ErrorContains     string               `yaml:"error_contains"`
	Rows              *int                 `yaml:"rows"`
	Pages             *int                 `yaml:"pages"`
	Page              *int                 `yaml:"page"`
	QuickList         bool                 `yaml:"quick_list"`
	WalkPages         bool                 `yaml:"walk_pages"`
	Headers           map[string]string    `yaml:"headers"`
	NoBody            bool                 `yaml:"no_body"`
}

// LoadCases reads every case file (*.yaml, *.yml, *.json) at the root of fsys,
// in the order of their names, and checks each case. Unknown keys are errors,
// so that a misspelt expectation never passes unnoticed.
func LoadCases(fsys fs.FS) ([]Suite, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("list case files: %w", err)
	}
	var suites []Suite
	for _, e := range entries {
		ext := path.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		data, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read case file: %w", err)
		}
		suite, err := ParseSuite(e.Name(), data)
		if err != nil {
			return nil, err
		}
		suites = append(suites, suite)
	}
	if len(suites) == 0 {
		return nil, errors.New("no case files (*.yaml, *.yml, *.json) found")
	}
	return suites, nil
}

// ParseSuite parses one case file: a YAML (or JSON) sequence of cases.
func ParseSuite(file string, data []byte) (Suite, error) {
	suite := Suite{Name: strings.TrimSuffix(file, path.Ext(file)), File: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var raws []rawCase
	if err := dec.Decode(&raws); err != nil {
		return suite, fmt.Errorf("%s: %w", file, err)
	}
	seen := map[string]bool{}
	for i, rc := range raws {
		c, err := rc.check()
		if err != nil {
			name := rc.Name
			if name == "" {
				name = fmt.Sprintf("case %d", i+1)
			}
			return suite, fmt.Errorf("%s: %s: %w", file, name, err)
		}
		if seen[c.Name] {
			return suite, fmt.Errorf("%s: case name %q is used twice", file, c.Name)
		}
		for _, a := range c.After {
			if !seen[a] {
				return suite, fmt.Errorf("%s: %s: after: %q is no earlier case of the file", file, c.Name, a)
			}
		}
		seen[c.Name] = true
		suite.Cases = append(suite.Cases, c)
	}
	return suite, nil
}

var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// check turns a case as written into a Case, refusing incomplete or contradictory ones.
func (rc rawCase) check() (Case, error) {
	c := Case{Name: rc.Name, Description: rc.Description, Save: rc.Save,
		Unchecked: rc.Unchecked, UncheckedReason: rc.UncheckedReason, Feature: rc.Feature, After: rc.After}
	if c.Name == "" {
		return c, errors.New("name is required")
	}
	if strings.ContainsAny(c.Name, "/\n") {
		return c, errors.New("a name must not contain / or a line break")
	}
	if c.Unchecked && c.UncheckedReason == "" {
		return c, errors.New("unchecked: true needs unchecked_reason")
	}
	if _, known := Features[c.Feature]; c.Feature != "" && !known {
		return c, fmt.Errorf("feature %q is not one of %s", c.Feature, strings.Join(slices.Sorted(maps.Keys(Features)), ", "))
	}

	rq := rc.Request
	c.Request = Request{Method: strings.ToUpper(rq.Method), Path: rq.Path, Query: rq.Query,
		Headers: rq.Headers, Auth: rq.Auth, RawBody: rq.RawBody, BodySize: rq.BodySize}
	if !slices.Contains(httpMethods, c.Request.Method) {
		return c, fmt.Errorf("request.method %q is not an HTTP method", rq.Method)
	}
	if !strings.HasPrefix(c.Request.Path, "/") || strings.ContainsAny(c.Request.Path, "?# ") {
		return c, fmt.Errorf("request.path %q must start with / and hold no query (use request.query), fragment or space", rq.Path)
	}
	switch c.Request.Auth {
	case "":
		c.Request.Auth = AuthToken
	case AuthToken, AuthNone, AuthInvalid:
	default:
		return c, fmt.Errorf("request.auth %q is not one of token, none, invalid", rq.Auth)
	}
	if !rq.Body.IsZero() {
		v, err := nodeValue(&rq.Body)
		if err != nil {
			return c, fmt.Errorf("request.body: %w", err)
		}
		c.Request.HasBody, c.Request.Body = true, v
	}
	if c.Request.HasBody && c.Request.RawBody != nil {
		return c, errors.New("request.body and request.raw_body exclude each other")
	}
	if c.Request.BodySize < 0 {
		return c, errors.New("request.body_size must not be negative")
	}

	ex := rc.Expect
	c.Expect = Expect{HTTPStatus: ex.HTTPStatus, Status: ex.Status, Value: ex.Value, ErrorContains: ex.ErrorContains,
		Rows: ex.Rows, Pages: ex.Pages, Page: ex.Page, QuickList: ex.QuickList, WalkPages: ex.WalkPages, Headers: ex.Headers,
		NoBody: ex.NoBody}
	if c.Expect.HTTPStatus == 0 {
		c.Expect.HTTPStatus = 200
	}
	if c.Expect.HTTPStatus < 100 || c.Expect.HTTPStatus > 599 {
		return c, fmt.Errorf("expect.http_status %d is not an HTTP status", c.Expect.HTTPStatus)
	}
	switch c.Expect.Status {
	case "":
		c.Expect.Status = StatusSuccess
	case StatusSuccess, StatusError, StatusErrorUpper:
	default:
		return c, fmt.Errorf("expect.status %q is not one of success, error, Error", ex.Status)
	}
	if !ex.Code.IsZero() {
		if ex.Code.Kind != yaml.ScalarNode {
			return c, errors.New("expect.code must be a string or null")
		}
		c.Expect.CodeSet = true
		if ex.Code.ShortTag() != "!!null" {
			code := ex.Code.Value
			c.Expect.Code = &code
		}
	}
	if c.Expect.NoBody && (ex.Status != "" || c.Expect.CodeSet || c.Expect.Value != nil || !ex.ValueJSON.IsZero() ||
		len(ex.ValueJSONContains) > 0 || ex.ErrorContains != "" || ex.Rows != nil || ex.Pages != nil || ex.Page != nil ||
		ex.QuickList || ex.WalkPages || len(rc.Save) > 0) {
		return c, errors.New("expect.no_body excludes every expectation of the envelope and save")
	}
	if c.Expect.Status != StatusSuccess && (!c.Expect.CodeSet || c.Expect.Code == nil) {
		return c, errors.New("a case that expects an error must give expect.code")
	}
	if !ex.ValueJSON.IsZero() {
		v, err := nodeValue(&ex.ValueJSON)
		if err != nil {
			return c, fmt.Errorf("expect.value_json: %w", err)
		}
		c.Expect.HasValueJSON, c.Expect.ValueJSON = true, v
	}
	if len(ex.ValueJSONContains) > 0 {
		c.Expect.ValueJSONContains = map[string][]any{}
		for p, n := range ex.ValueJSONContains {
			if _, err := parseValuePath(p); err != nil {
				return c, fmt.Errorf("expect.value_json_contains: %w", err)
			}
			v, err := nodeValue(&n)
			if err != nil {
				return c, fmt.Errorf("expect.value_json_contains %q: %w", p, err)
			}
			elems, ok := v.([]any)
			if !ok || len(elems) == 0 {
				return c, fmt.Errorf("expect.value_json_contains %q: give a non-empty list of wanted elements", p)
			}
			c.Expect.ValueJSONContains[p] = elems
		}
	}
	for name, p := range c.Save {
		if !varName.MatchString(name) {
			return c, fmt.Errorf("save: %q is not a variable name", name)
		}
		if _, err := parseValuePath(p); err != nil {
			return c, fmt.Errorf("save %s: %w", name, err)
		}
	}
	var bad []string
	c.eachString(func(s string) {
		if err := checkPlaceholders(s); err != nil {
			bad = append(bad, err.Error())
		}
	})
	if len(bad) > 0 {
		return c, errors.New(strings.Join(bad, "; "))
	}
	return c, nil
}

// eachString calls f with every string of the case that may hold placeholders.
func (c *Case) eachString(f func(string)) {
	f(c.Request.Path)
	for _, v := range c.Request.Query {
		f(v)
	}
	for _, v := range c.Request.Headers {
		f(v)
	}
	if c.Request.RawBody != nil {
		f(*c.Request.RawBody)
	}
	walkStrings(c.Request.Body, f)
	if c.Expect.Value != nil {
		f(*c.Expect.Value)
	}
	f(c.Expect.ErrorContains)
	walkStrings(c.Expect.ValueJSON, f)
	for _, elems := range c.Expect.ValueJSONContains {
		walkStrings(elems, f)
	}
	for _, v := range c.Expect.Headers {
		f(v)
	}
}

// Uses lists the variables the case's placeholders name, each once.
func (c *Case) Uses() []string {
	var names []string
	c.eachString(func(s string) {
		for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
			if !slices.Contains(names, m[1]) {
				names = append(names, m[1])
			}
		}
	})
	slices.Sort(names)
	return names
}

func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	case map[string]any:
		for _, e := range v {
			walkStrings(e, f)
		}
	}
}

// nodeValue converts a YAML node into a JSON value: map[string]any, []any,
// string, bool, nil or json.Number. Numbers keep their literal digits, so that
// decimals are sent and compared exactly.
func nodeValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil, errors.New("empty document")
		}
		return nodeValue(n.Content[0])
	case yaml.AliasNode:
		return nodeValue(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				return nil, fmt.Errorf("line %d: object keys must be plain strings", k.Line)
			}
			v, err := nodeValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := nodeValue(e)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
			return b, nil
		case "!!int":
			i, ok := new(big.Int).SetString(n.Value, 0)
			if !ok {
				return nil, fmt.Errorf("line %d: integer %q", n.Line, n.Value)
			}
			return json.Number(i.String()), nil
		case "!!float":
			if json.Valid([]byte(n.Value)) {
				return json.Number(n.Value), nil
			}
			var f float64
			if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, fmt.Errorf("line %d: %q is not a JSON number", n.Line, n.Value)
			}
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
		case "!!str", "!!timestamp":
			return n.Value, nil
		default:
			return nil, fmt.Errorf("line %d: YAML tag %s has no JSON form", n.Line, n.ShortTag())
		}
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}
