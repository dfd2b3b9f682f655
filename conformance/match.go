package conformance

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"unicode/utf8"
)

// matchJSON checks that got has everything want has: an object's members are a
// subset (extra members of got are fine), an array has exactly want's elements in
// order (each matched the same way), and scalars are equal, numbers by value.
func matchJSON(want, got any, where string) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %s", where, excerptJSON(got))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s: member %q is missing", where, k)
			}
			if err := matchJSON(w[k], gv, where+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array, got %s", where, excerptJSON(got))
		}
		if len(g) != len(w) {
			return fmt.Errorf("%s: want %d elements, got %d: %s", where, len(w), len(g), excerptJSON(got))
		}
		for i := range w {
			if err := matchJSON(w[i], g[i], fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	case json.Number:
		if !numbersEqual(w, got) {
			return fmt.Errorf("%s: want %s, got %s", where, w, excerptJSON(got))
		}
		return nil
	default:
		if want != got {
			return fmt.Errorf("%s: want %s, got %s", where, excerptJSON(want), excerptJSON(got))
		}
		return nil
	}
}

// containsJSON checks that some element of the array got matches want.
func containsJSON(want, got any, where string) error {
	g, ok := got.([]any)
	if !ok {
		return fmt.Errorf("%s: want an array, got %s", where, excerptJSON(got))
	}
	for _, e := range g {
		if matchJSON(want, e, where) == nil {
			return nil
		}
	}
	return fmt.Errorf("%s: no element matches %s (the array has %d elements)", where, excerptJSON(want), len(g))
}

func numbersEqual(want json.Number, got any) bool {
	var text string
	switch g := got.(type) {
	case json.Number:
		text = g.String()
	case float64:
		text = strconv.FormatFloat(g, 'g', -1, 64)
	default:
		return false
	}
	a, okA := new(big.Rat).SetString(want.String())
	b, okB := new(big.Rat).SetString(text)
	return okA && okB && a.Cmp(b) == 0
}

// excerptJSON shows a JSON value in a failure message, shortened when long.
func excerptJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return excerpt(b, 200)
}

// excerpt is the start of a text for a report, with its full length when cut.
func excerpt(b []byte, limit int) string {
	if len(b) <= limit {
		return string(b)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", b[:cut], len(b))
}
