package impl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/crmservice/crm/gen"
)

// BenchmarkMailBodyDecoding measures the memory of decoding a 9.5 MiB
// POST /mail/send for validation (B/op), the decision about kin-openapi's
// decoder in docs/decisions.md ("Memory of a request"): "kin-openapi" is the
// decoder validateBody uses (json.Decoder with UseNumber, whose buffer grows
// by doubling as it reads), "json.Decoder" the same without kin-openapi,
// "json.Unmarshal" a decoding of the bytes in hand, without that buffer (but
// with binary floats, which the validation and the handlers cannot take).
// The first two less the last is the cost of the doubling buffer.
func BenchmarkMailBodyDecoding(b *testing.B) {
	doc, err := gen.GetSpec()
	if err != nil {
		b.Fatal(err)
	}
	schema := doc.Paths.Find("/mail/send").Post.RequestBody.Value.Content.Get("application/json").Schema
	html := strings.Repeat("<p>Memory under large requests: a paragraph of the body.</p>\n", (19<<19)*3/4/62)
	body, _ := json.Marshal(map[string]any{"mail": map[string]any{"account_id": "1", "to_address": "a@b.example",
		"subject": "", "body": base64.StdEncoding.EncodeToString([]byte(html))}})
	decode := openapi3filter.RegisteredBodyDecoder("application/json")
	b.Run("kin-openapi", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := decode(bytes.NewReader(body), http.Header{}, schema, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Decoder", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var v any
			if err := json.Unmarshal(body, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
