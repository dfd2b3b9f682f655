package impl_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// schemaFuzzPerOperation is how many requests TestSchemaFuzz sends to each
// operation: a few thousand in all, seconds of work.
const schemaFuzzPerOperation = 40

// hostileStrings are texts every string parameter and field gets now and then.
var hostileStrings = []string{"", " ", "a\x00b", "\xff\xfe", "\xc0\xaf", "\xed\xbf\xbf", "%00", "'; DROP TABLE companies; --",
	`\u0000`, "😀", strings.Repeat("x", 70_000), "9223372036854775808", "-1", "null", "1e309", "2026-02-30", "0000-00-00",
	"<script>alert(1)</script>", "id,id", "ADD_", "\t\n", "%", "%%", "\\", `"`}

// TestSchemaFuzz sends every operation of the contract requests whose
// parameters and bodies are drawn from its schemas: valid values, their
// boundaries and just past them, wrong types, hostile strings. Every reply
// must validate against the contract (env.do checks it), and none may be code
// "500" or an HTTP 5xx but the documented 503 of readiness. The seed is
// fixed (CRM_SCHEMA_FUZZ_SEED overrides it) and printed on failure.
func TestSchemaFuzz(t *testing.T) {
	seed := uint64(20261124)
	if s := os.Getenv("CRM_SCHEMA_FUZZ_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("CRM_SCHEMA_FUZZ_SEED %q: %v", s, err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("TestSchemaFuzz seed %d (CRM_SCHEMA_FUZZ_SEED=%d repeats it)", seed, seed)
		}
	})
	e := newEnv(t, withWebhooks(testSecretBox(t)))
	w := e.newWorld(t, "acme")
	company, contact := newCompany(t, e, w, "Contoso", w.member)
	deal := newDeal(t, e, w, company, w.member, nil)
	g := &valueGen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		ids: []int64{company, contact, deal, w.member.id, w.admin.id, w.dirs[9][0], w.dirs[41][0]}}
	tokens := []string{w.admin.token, w.head.token, w.member.token, w.other.token}

	var paths []string
	for path := range e.contract.Doc.Paths.Map() {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	total, codes := 0, map[string]int{}
	for _, path := range paths {
		item := e.contract.Doc.Paths.Find(path)
		for _, method := range []string{"GET", "POST"} {
			op := item.GetOperation(method)
			if op == nil {
				continue
			}
			for range schemaFuzzPerOperation {
				target, body, header := g.request(path, op)
				token := tokens[g.rng.IntN(len(tokens))]
				r := e.do(t, request{method: method, target: target, token: token, body: body, header: header})
				total++
				codes[r.code()]++
				if r.code() == "500" || (r.HTTPStatus >= 500 && !(r.HTTPStatus == 503 && path == "/readyz")) {
					t.Errorf("%s %s %q: HTTP %d %s", method, target, body, r.HTTPStatus, r.Raw)
				}
			}
			if t.Failed() {
				return
			}
		}
	}
	t.Logf("%d requests, by code: %v", total, codes)
}

// valueGen draws values from schemas.
type valueGen struct {
	rng *rand.Rand
	ids []int64
}

func (g *valueGen) chance(p float64) bool { return g.rng.Float64() < p }

// request builds one request of op: the target with its path and query
// parameters, the body (a JSON text, or nil) and the header parameters.
func (g *valueGen) request(path string, op *openapi3.Operation) (string, any, map[string]string) {
	query := url.Values{}
	header := map[string]string{}
	for _, ref := range op.Parameters {
		p := ref.Value
		switch p.In {
		case "path":
			v := g.text(p.Schema.Value)
			if v == "" {
				v = "1"
			}
			// A slash, even escaped as %2F, is a separator to the contract's
			// router: the request would name another path, which no
			// operation describes, while the server's router keeps it in
			// the segment (TestEdgeInput covers such paths).
			v = strings.ReplaceAll(v, "/", "|")
			path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(v))
		case "query":
			if p.Required || g.chance(0.5) {
				query.Set(p.Name, g.text(p.Schema.Value))
			}
		case "header":
			if g.chance(0.3) {
				v := g.text(p.Schema.Value)
				if validHeader(v) {
					header[p.Name] = v
				}
			}
		}
	}
	target := path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var body any
	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		if mt := rb.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil && !g.chance(0.05) {
			data, err := json.Marshal(g.value(mt.Schema.Value, 0))
			if err == nil {
				body = string(data)
				if g.chance(0.05) { // raw bytes JSON cannot escape
					body = strings.Replace(string(data), `"`, "\"\xff", 1)
				}
			}
		}
	}
	return target, body, header
}

func validHeader(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] == 0x7f {
			return false
		}
	}
	return v != "" && len(v) < 4096
}

// text draws a parameter's value as it is written in a query or a path.
func (g *valueGen) text(s *openapi3.Schema) string {
	switch v := g.value(s, 0).(type) {
	case string:
		return v
	case nil:
		return ""
	case json.Number:
		return v.String()
	default:
		data, _ := json.Marshal(v)
		return string(data)
	}
}

// value draws a value of schema s: mostly valid, sometimes a boundary, just
// past one, the wrong type or a hostile string.
func (g *valueGen) value(s *openapi3.Schema, depth int) any {
	if s == nil {
		return nil
	}
	if g.chance(0.04) {
		return hostileStrings[g.rng.IntN(len(hostileStrings))]
	}
	if g.chance(0.02) {
		return []any{nil, true, 1.5, -1, map[string]any{}, []any{}}[g.rng.IntN(6)]
	}
	if len(s.Enum) > 0 && !g.chance(0.1) {
		return s.Enum[g.rng.IntN(len(s.Enum))]
	}
	if s.Example != nil && g.chance(0.3) {
		return s.Example
	}
	if len(s.OneOf) > 0 {
		return g.value(s.OneOf[g.rng.IntN(len(s.OneOf))].Value, depth+1)
	}
	if len(s.AnyOf) > 0 {
		return g.value(s.AnyOf[g.rng.IntN(len(s.AnyOf))].Value, depth+1)
	}
	if len(s.AllOf) > 0 {
		return g.value(s.AllOf[0].Value, depth+1)
	}
	switch {
	case s.Type.Is("integer"), s.Type.Is("number"):
		return g.number(s)
	case s.Type.Is("boolean"):
		return g.chance(0.5)
	case s.Type.Is("string"):
		return g.str(s)
	case s.Type.Is("array"):
		if depth > 4 || s.Items == nil {
			return []any{}
		}
		n := g.rng.IntN(3)
		if s.MaxItems != nil && g.chance(0.05) {
			n = int(*s.MaxItems) + 1
		}
		out := make([]any, n)
		for i := range out {
			out[i] = g.value(s.Items.Value, depth+1)
		}
		return out
	default: // object
		out := map[string]any{}
		if depth > 4 {
			return out
		}
		// In the order of the names, so that the seed repeats the run (a
		// map's order would draw the values in another order every time).
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			prop := s.Properties[name]
			if slices.Contains(s.Required, name) || g.chance(0.6) {
				if !g.chance(0.03) { // sometimes a required member is missing
					out[name] = g.value(prop.Value, depth+1)
				}
			}
		}
		if g.chance(0.03) {
			out["unknown_member"] = 1
		}
		return out
	}
}

func (g *valueGen) number(s *openapi3.Schema) any {
	lo, hi := -1e6, 1e6
	if s.Min != nil {
		lo = *s.Min
	}
	if s.Max != nil {
		hi = *s.Max
	}
	candidates := []float64{lo, hi, lo - 1, hi + 1, 0, -1, 1, math.MaxInt64, math.MaxInt32, math.MaxInt32 + 1, -math.MaxInt64, 1e20}
	for _, id := range g.ids {
		candidates = append(candidates, float64(id))
	}
	var v float64
	switch {
	case g.chance(0.5):
		v = candidates[g.rng.IntN(len(candidates))]
	case hi-lo < 1e9:
		v = lo + g.rng.Float64()*(hi-lo)
	default:
		v = float64(g.rng.IntN(1000))
	}
	if s.Type.Is("integer") || g.chance(0.5) {
		v = math.Trunc(v)
		if g.chance(0.02) {
			return json.Number("9223372036854775808")
		}
		return json.Number(strconv.FormatFloat(v, 'f', -1, 64))
	}
	return json.Number(strconv.FormatFloat(v, 'f', 3, 64))
}

func (g *valueGen) str(s *openapi3.Schema) string {
	switch s.Format {
	case "date":
		return []string{"2026-11-20", "2026-02-30", "1999-01-01", "9999-12-31", "0001-01-01", "2026-13-01"}[g.rng.IntN(6)]
	case "date-time":
		return "2026-11-20 10:00:00"
	case "email":
		return "a@b.example"
	}
	if g.chance(0.3) {
		n := g.rng.IntN(20)
		if s.MaxLength != nil && g.chance(0.3) {
			n = int(*s.MaxLength) + g.rng.IntN(2)
		}
		if n < int(s.MinLength) {
			n = int(s.MinLength)
		}
		return strings.Repeat("ab", n/2+1)[:n]
	}
	switch g.rng.IntN(4) {
	case 0:
		return fmt.Sprint(g.ids[g.rng.IntN(len(g.ids))])
	case 1:
		return "id,name"
	case 2:
		return hostileStrings[g.rng.IntN(len(hostileStrings))]
	}
	return "Contoso"
}
