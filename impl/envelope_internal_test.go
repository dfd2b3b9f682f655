package impl

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"testing"

	"github.com/crmservice/crm/gen"
)

// encodeAsGenerated is what the generated response types write: json.Encoder.
func encodeAsGenerated(t testing.TB, env gen.Envelope) []byte {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(env); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAppendEnvelope: the hand-written encoder of large replies writes the
// very bytes of encoding/json, for the escapes it knows and for random text
// (invalid UTF-8 included).
func TestAppendEnvelope(t *testing.T) {
	code, msg := "409", `duplicate: "Acme" <b>&</b>`
	values := []string{"", "1", `[{"id":1,"name":"Acme \"Ltd\""}]`, "line\nbreak\r\ttab\x00\x01\x1f\x7f",
		"<script>&amp;</script>", "\u2028\u2029 end", "héllo wörld ✓ 😀", "bad \xff\xfe utf-8 \xc3", `back\slash\\`}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(64))
		for i := range b {
			switch rng.IntN(4) {
			case 0:
				b[i] = byte(rng.IntN(256))
			case 1:
				b[i] = `"\<>&`[rng.IntN(5)]
			default:
				b[i] = byte('a' + rng.IntN(26))
			}
		}
		values = append(values, string(b)+"€\u2028")
	}
	for i, v := range values {
		env := gen.Envelope{Status: gen.StatusSuccess, Value: v, Rows: i, Page: i % 7, Pages: i % 3}
		if i%2 == 1 {
			env.Code, env.Error, env.Status = &code, msg, gen.StatusError
		}
		want := encodeAsGenerated(t, env)
		if got := appendEnvelope(nil, env); !bytes.Equal(got, want) {
			t.Fatalf("value %q:\n got %s\nwant %s", v, got, want)
		}
	}
}

// TestEnvelopeReplyWrites: the reply object writes the status, the content
// type and the envelope, and a reused buffer holds nothing of an earlier one.
func TestEnvelopeReplyWrites(t *testing.T) {
	for _, v := range []string{`[{"id":1,"name":"a long first reply"}]`, `[]`} {
		rec := httptest.NewRecorder()
		env := success(v)
		if err := envelopeReply(env).VisitCompanyGetResponse(rec); err != nil {
			t.Fatal(err)
		}
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || !bytes.Equal(rec.Body.Bytes(), encodeAsGenerated(t, env)) {
			t.Fatalf("HTTP %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes())
		}
	}
}

func BenchmarkEnvelope(b *testing.B) {
	item := `{"id": 123456, "first_name": "Anna", "last_name": "O'Neil", "phones": [{"id": 1, "phone": "+371 2000 0000", "descr": "work"}], "emails": [{"id": 2, "email": "anna@acme.example"}]}, `
	value := "[" + string(bytes.Repeat([]byte(item), 4000)) + "]" // about 760 kB, as the card of 1,000 contact persons
	env := success(value)
	b.SetBytes(int64(len(value)))
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			encodeAsGenerated(b, env)
		}
	})
	b.Run("appendEnvelope", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = appendEnvelope(buf[:0], env)
		}
	})
}
