package impl

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// validateBody validates a request body already read, as
// openapi3filter.ValidateRequestBody would (its errors are the same
// *openapi3filter.RequestError), without reading it again: kin-openapi's own
// reads the body into a second, growing buffer, which for a 10 MiB mail
// costs some 40 MiB. It returns the body for the handler, carrying the
// validated value so that the generated code binds it instead of decoding
// the body again (oapi-codegen's runtime.BindJSONBody).
func validateBody(in *openapi3filter.RequestValidationInput, rb *openapi3.RequestBody, body []byte) (io.ReadCloser, error) {
	raw := io.NopCloser(bytes.NewReader(body))
	if len(body) == 0 {
		if rb.Required {
			return nil, &openapi3filter.RequestError{Input: in, RequestBody: rb, Err: openapi3filter.ErrInvalidRequired}
		}
		return raw, nil
	}
	if len(rb.Content) == 0 {
		return raw, nil
	}
	ct := in.Request.Header.Get("Content-Type")
	content := rb.Content.Get(ct)
	if content == nil {
		return nil, &openapi3filter.RequestError{Input: in, RequestBody: rb,
			Reason: fmt.Sprintf("header Content-Type has unexpected value %q", ct)}
	}
	if content.Schema == nil {
		return raw, nil
	}
	mediaType, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, &openapi3filter.RequestError{Input: in, RequestBody: rb, Reason: "failed to decode request body",
			Err: &openapi3filter.ParseError{Kind: openapi3filter.KindInvalidFormat, Cause: err}}
	}
	decode := openapi3filter.RegisteredBodyDecoder(mediaType)
	if decode == nil && strings.HasSuffix(mediaType, "+json") {
		decode = openapi3filter.RegisteredBodyDecoder("application/json")
	}
	if decode == nil {
		return nil, &openapi3filter.RequestError{Input: in, RequestBody: rb, Reason: "failed to decode request body",
			Err: &openapi3filter.ParseError{Kind: openapi3filter.KindUnsupportedFormat, Reason: "unsupported content type " + mediaType}}
	}
	enc := func(name string) *openapi3.Encoding { return content.Encoding[name] }
	value, err := decode(bytes.NewReader(body), in.Request.Header, content.Schema, enc)
	if err != nil {
		return nil, &openapi3filter.RequestError{Input: in, RequestBody: rb, Reason: "failed to decode request body", Err: err}
	}
	if err := content.Schema.Value.VisitJSON(value, openapi3.VisitAsRequest()); err != nil {
		reason := "doesn't match schema"
		if id := strings.TrimSpace(content.Schema.Ref); id != "" {
			reason += " " + id
		} else if id := strings.TrimSpace(content.Schema.Value.Title); id != "" {
			reason += " " + id
		}
		return nil, &openapi3filter.RequestError{Input: in, RequestBody: rb, Reason: reason, Err: err}
	}
	if len(body) > largeBody {
		// The handler binds the value; keeping the bytes too would hold a
		// large body twice for as long as the operation runs.
		raw = io.NopCloser(bytes.NewReader(nil))
	}
	return validatedBody{ReadCloser: raw, value: value}, nil
}

// validatedBody is a request body with the value validated from it, which
// oapi-codegen's runtime binds without decoding the body again.
type validatedBody struct {
	io.ReadCloser
	value any
}

// ValidatedValue is the value decoded from the body and validated.
func (b validatedBody) ValidatedValue() any { return b.value }

// defaultBodyValues bounds the values of a body whose schema does not bound
// them itself (an array without maxItems, an object open to any member, a
// member of any type: the additional fields' values of POST
// /field/values/update, which the handler holds to scalars).
const defaultBodyValues = 10_000

// bodyValues is the most values a body of op can hold and still be valid
// (each array, object, string, number and literal counts once, wherever it
// nests): what the schema of its JSON body allows by maxItems, maxProperties
// and closed objects, or defaultBodyValues where the schema sets no bound; 0
// for an operation without a JSON body. The scan before validation refuses a
// body with more (checkBodyText), since decoding one costs memory by its
// values: a megabyte of [0,0,0,…] decodes into some 50 MiB.
func bodyValues(op *openapi3.Operation) int {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return 0
	}
	content := op.RequestBody.Value.Content.Get("application/json")
	if content == nil || content.Schema == nil {
		return 0
	}
	n := schemaValues(content.Schema, 0)
	if n < 0 {
		return defaultBodyValues
	}
	return n
}

// bodyInvalidText is the x-invalid-text of the schema of op's JSON body, or
// "": the text of every way the body fails its schema, so also of one with
// more values than it takes, which is refused before validation (the
// universal list's parameters sent in the body).
func bodyInvalidText(op *openapi3.Operation) string {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return ""
	}
	content := op.RequestBody.Value.Content.Get("application/json")
	if content == nil || content.Schema == nil || content.Schema.Value == nil {
		return ""
	}
	text, _ := content.Schema.Value.Extensions["x-invalid-text"].(string)
	return text
}

// schemaValues is the most values a value valid against ref can hold, or -1
// when the schema sets no bound. allOf is counted as the sum of its parts, a
// bound that is never too low.
func schemaValues(ref *openapi3.SchemaRef, depth int) int {
	const most = 1 << 40 // beyond any body's values; keeps the sums from overflowing
	if ref == nil || ref.Value == nil || depth > 32 {
		return -1
	}
	s := ref.Value
	add := func(a, b int) int {
		if a < 0 || b < 0 {
			return -1
		}
		return min(a+b, most)
	}
	times := func(n uint64, v int) int {
		if v < 0 {
			return -1
		}
		if n > most || v > 0 && n > uint64(most/v) {
			return most
		}
		return int(n) * v
	}
	switch {
	case len(s.AllOf) > 0:
		total := 0
		for _, part := range s.AllOf {
			total = add(total, schemaValues(part, depth+1))
		}
		return total
	case len(s.OneOf) > 0 || len(s.AnyOf) > 0:
		most := 0
		for _, alt := range append(append(openapi3.SchemaRefs(nil), s.OneOf...), s.AnyOf...) {
			n := schemaValues(alt, depth+1)
			if n < 0 {
				return -1
			}
			most = max(most, n)
		}
		return most
	case s.Type.Is(openapi3.TypeArray):
		if s.MaxItems == nil {
			return -1
		}
		return add(1, times(*s.MaxItems, schemaValues(s.Items, depth+1)))
	case s.Type.Is(openapi3.TypeObject) || len(s.Properties) > 0:
		total := 1
		for _, p := range s.Properties {
			total = add(total, schemaValues(p, depth+1))
		}
		if ap := s.AdditionalProperties; ap.Has == nil || *ap.Has || ap.Schema != nil {
			if s.MaxProps == nil {
				return -1
			}
			each := 1
			if ap.Schema != nil {
				each = schemaValues(ap.Schema, depth+1)
			}
			total = add(total, times(*s.MaxProps, each))
		}
		return total
	case s.Type == nil || s.Type.IsEmpty() || s.Type.IsMultiple():
		return -1 // any value, arrays and objects included
	}
	return 1
}
