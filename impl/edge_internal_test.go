package impl

import (
	"runtime"
	"strings"
	"testing"

	"github.com/crmservice/crm/gen"
)

// allocated is the memory f allocates, in bytes.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestBodyScanMemory holds the scan of bodies before validation to a small,
// fixed memory whatever the body nests or holds: it keeps at most
// maxBodyDepth frames and a prefix of each member name, and copies no value.
func TestBodyScanMemory(t *testing.T) {
	const size = 10 << 20
	for _, tc := range []struct {
		name string
		body string
		want *Error
	}{
		{"arrays nested 5 million deep", strings.Repeat("[", size/2) + strings.Repeat("]", size/2), errBodyTooDeep},
		{"objects nested with a NUL name innermost", strings.Repeat(`{"a":`, size/6) + `{"\u0000":1}` + strings.Repeat("}", size/6), errBodyTooDeep},
		{"one 10 MiB string", `{"body":"` + strings.Repeat("QUFB", size/4) + `"}`, nil},
		{"a 10 MiB member name with NUL", `{"` + strings.Repeat("n", size) + `\u0000": 1}`, badRequest("request body: field %q: %s", "(a member name)", textError)},
		{"64 levels, then a 10 MiB member name", strings.Repeat(`{"a":`, 63) + `{"` + strings.Repeat("n", size) + `":"\u0000"}` + strings.Repeat("}", 63),
			badRequest("request body: field %q: %s", "a.a.a.a.….a.a.a."+strings.Repeat("n", 61)+"…", textError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			var got *Error
			n := allocated(func() { got = checkBodyText(body, 0, nil) })
			switch {
			case tc.want == nil && got != nil, tc.want != nil && (got == nil || got.Msg != tc.want.Msg):
				t.Errorf("checkBodyText = %v, want %v", got, tc.want)
			}
			if n > 64<<10 {
				t.Errorf("the scan of %d bytes allocated %d bytes", len(body), n)
			}
		})
	}
}

func TestFieldPath(t *testing.T) {
	long := strings.Repeat("é", 40) // 80 bytes
	for _, tc := range []struct {
		parts []string
		want  string
	}{
		{nil, ""},
		{[]string{"Contacts", "1", "first_name"}, "Contacts.1.first_name"},
		{[]string{long}, strings.Repeat("é", 30) + "…"},
		{strings.Split("a.b.c.d.e.f.g.h", "."), "a.b.c.d.e.f.g.h"},
		{strings.Split("a.b.c.d.e.f.g.h.i", "."), "a.b.c.d.….f.g.h.i"},
	} {
		if got := fieldPath(tc.parts); got != tc.want {
			t.Errorf("fieldPath(%q) = %q, want %q", tc.parts, got, tc.want)
		}
	}
	if got := cutText(strings.Repeat("x", 600), maxErrorText); len(got) != maxErrorText || !strings.HasSuffix(got, "…") {
		t.Errorf("cutText to %d: %d bytes", maxErrorText, len(got))
	}
}

func TestBodyValueCount(t *testing.T) {
	for body, want := range map[string]int{
		`1`: 1, `"x"`: 1, `[]`: 1, `{}`: 1, `[1,2]`: 3, ` [ 1 , 2 ] `: 3, `[[],[]]`: 3,
		`{"a":[1,{"b":null}],"c":"x"}`: 6, `{"a":true,"b":-1.5e3,"c":"a,b:[{"}`: 4,
	} {
		if _, p := scanJSONBody([]byte(body), want); p != jsonFine {
			t.Errorf("%s: refused at %d values", body, want)
		}
		if _, p := scanJSONBody([]byte(body), want-1); p != jsonTooMany && want > 1 {
			t.Errorf("%s: not refused at %d values", body, want-1)
		}
	}
	// The decoding memory scales with the values: a wide body is refused
	// without decoding, as cheaply as a deep one.
	wide := []byte(`{"id":1,"note":[` + strings.Repeat("0,", 5<<20) + `0]}`)
	var got *Error
	if n := allocated(func() { got = checkBodyText(wide, 24, nil) }); n > 64<<10 || got == nil || got.Msg != errBodyTooMany(24).Msg {
		t.Errorf("a 10 MiB wide body: %v, %d bytes allocated", got, n)
	}
}

// TestBodyValuesOfOperations holds the bound of each operation's body to what
// its schema allows: the largest valid body passes, and no operation is left
// without a bound.
func TestBodyValuesOfOperations(t *testing.T) {
	doc, err := gen.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"POST /company/insert": 26_206, "POST /deal/insert": 4_513, "POST /company/update": 24, "POST /contact/insert": 260,
		"POST /field/values/update": defaultBodyValues} // a field's value is of any type by the schema
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			n := bodyValues(op)
			if w, ok := want[method+" "+path]; ok && n != w {
				t.Errorf("%s %s: %d values, want %d", method, path, n, w)
			}
			if op.RequestBody != nil && n <= 0 {
				t.Errorf("%s %s: no bound of its body's values", method, path)
			}
			if _, listed := want[method+" "+path]; !listed && n == defaultBodyValues {
				t.Errorf("%s %s: the schema does not bound its body's values", method, path)
			}
		}
	}
}
