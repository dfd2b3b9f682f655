package impl

import (
	"encoding/json"
	"strings"

	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
)

// str is the value of an optional text field; an omitted one is "".
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// deref is the value of an optional array field; an omitted one is empty.
func deref[T any](p *[]T) []T {
	if p == nil {
		return nil
	}
	return *p
}

// splitTags turns a comma-separated tag string into the stored tag list: each
// tag trimmed, empty ones dropped, repeats kept once, in the order given.
func splitTags(s string) pq.StringArray {
	tags := pq.StringArray{}
	seen := map[string]bool{}
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if t != "" && !seen[t] {
			seen[t] = true
			tags = append(tags, t)
		}
	}
	return tags
}

// phoneInput is a phone as given in a request.
type phoneInput struct {
	Phone string
	Descr string
}

func emailsOf(in *[]gen.EmailInput) []string {
	var out []string
	for _, e := range deref(in) {
		out = append(out, e.Email)
	}
	return out
}

func phonesOf(in *[]gen.PhoneInput) []phoneInput {
	var out []phoneInput
	for _, ph := range deref(in) {
		out = append(out, phoneInput{Phone: ph.Phone, Descr: str(ph.Descr)})
	}
	return out
}

// decimal is an optional decimal of a request as the literal text it was sent
// in, which PostgreSQL reads exactly with $n::numeric; an omitted one is nil
// (NULL). A json.Number never passes through a float64 on its way.
func decimal(n *json.Number) *string {
	if n == nil {
		return nil
	}
	s := string(*n)
	return &s
}
