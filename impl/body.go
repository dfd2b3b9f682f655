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
