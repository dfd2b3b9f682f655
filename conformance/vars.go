package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Placeholders are {{name}}, {{name|int}} and {{name|json}}. In text each
// inserts the variable's text (|int first checks that it is an integer). A JSON
// string of a body or value_json that is exactly {{name|int}} or {{name|json}}
// becomes the number (or the JSON value) itself instead of a string.
var (
	placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\|\s*(int|json)\s*)?\}\}`)
	varName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	integerText = regexp.MustCompile(`^-?[0-9]+$`)
)

// missingVarError is the failure of a case that uses a variable nobody set.
type missingVarError struct{ name string }

func (e *missingVarError) Error() string { return "variable " + e.name + " not set" }

// checkPlaceholders reports a {{ that does not open a well-formed placeholder.
func checkPlaceholders(s string) error {
	rest := placeholder.ReplaceAllString(s, "")
	if strings.Contains(rest, "{{") || strings.Contains(rest, "}}") {
		return fmt.Errorf("malformed placeholder in %q: write {{name}}, {{name|int}} or {{name|json}}", s)
	}
	return nil
}

// expandText replaces every placeholder of s by its variable's text.
func expandText(s string, vars map[string]string) (string, error) {
	var firstErr error
	out := placeholder.ReplaceAllStringFunc(s, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		v, err := lookup(vars, sub[1], sub[2])
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return v
	})
	return out, firstErr
}

func lookup(vars map[string]string, name, filter string) (string, error) {
	v, ok := vars[name]
	if !ok {
		return "", &missingVarError{name: name}
	}
	switch filter {
	case "int":
		if !integerText.MatchString(v) {
			return "", fmt.Errorf("variable %s = %q is not an integer", name, v)
		}
	case "json":
		if !json.Valid([]byte(v)) {
			return "", fmt.Errorf("variable %s = %q is not JSON", name, v)
		}
	}
	return v, nil
}

// expandJSON returns a copy of the JSON value v with its placeholders replaced.
func expandJSON(v any, vars map[string]string) (any, error) {
	switch v := v.(type) {
	case string:
		if m := placeholder.FindStringSubmatch(v); m != nil && m[0] == v && m[2] != "" {
			text, err := lookup(vars, m[1], m[2])
			if err != nil {
				return nil, err
			}
			return decodeJSON([]byte(text), true)
		}
		return expandText(v, vars)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			x, err := expandJSON(e, vars)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			x, err := expandJSON(e, vars)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	}
	return v, nil
}

// decodeJSON decodes exactly one JSON value; exact keeps numbers as
// json.Number (their text), for the variables cases save and compare.
func decodeJSON(data []byte, exact bool) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if exact {
		dec.UseNumber()
	}
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not JSON: text after the first value")
	}
	return v, nil
}

// valueStep is one step of a value path: a member name or an array index.
type valueStep struct {
	key   string
	index int
	isKey bool
}

// parseValuePath parses a path into a decoded value: "." (or "") is the whole
// value; otherwise member names separated by dots and [n] array indexes, such
// as "[0].ID", "company.user_id" or "contacts[0].Emails[1].email".
func parseValuePath(p string) ([]valueStep, error) {
	s := strings.TrimPrefix(p, ".")
	var steps []valueStep
	for s != "" {
		switch {
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: [ without ]", p)
			}
			n, err := strconv.Atoi(s[1:end])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("path %q: %q is not an array index", p, s[1:end])
			}
			steps = append(steps, valueStep{index: n})
			s = s[end+1:]
		case s[0] == '.':
			s = s[1:]
			if s == "" || s[0] == '.' || s[0] == '[' {
				return nil, fmt.Errorf("path %q: empty member name", p)
			}
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			steps = append(steps, valueStep{key: s[:end], isKey: true})
			s = s[end:]
			if s != "" && s[0] != '.' && s[0] != '[' {
				return nil, fmt.Errorf("path %q: unexpected %q", p, s)
			}
		}
	}
	return steps, nil
}

// atPath returns the part of v that path p names.
func atPath(v any, p string) (any, error) {
	steps, err := parseValuePath(p)
	if err != nil {
		return nil, err
	}
	where := "value"
	for _, st := range steps {
		if st.isKey {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s is %s, not an object", where, kindOf(v))
			}
			if v, ok = m[st.key]; !ok {
				return nil, fmt.Errorf("%s has no member %q", where, st.key)
			}
			where += "." + st.key
			continue
		}
		a, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is %s, not an array", where, kindOf(v))
		}
		if st.index >= len(a) {
			return nil, fmt.Errorf("%s has %d elements, no [%d]", where, len(a), st.index)
		}
		v = a[st.index]
		where += fmt.Sprintf("[%d]", st.index)
	}
	return v, nil
}

// varText is the text a variable saved from v holds: a string as it is, a number
// as its digits, anything else as compact JSON.
func varText(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", errors.New("it is null")
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	return string(b), nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
