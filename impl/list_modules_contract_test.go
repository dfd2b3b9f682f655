package impl

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/crmservice/crm/gen"
)

// TestListModulesContract holds the x-list-modules extension of the universal list,
// from which the typed clients take the columns of each module, to the server's
// whitelist: the same modules, the same columns, ADD_ columns where the server has them.
func TestListModulesContract(t *testing.T) {
	doc, err := gen.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	op := doc.Paths.Find("/common/list/paging/{module}").Post
	raw, err := json.Marshal(op.Extensions["x-list-modules"])
	if err != nil {
		t.Fatal(err)
	}
	var declared map[string]struct {
		Name             string   `json:"name"`
		AdditionalFields bool     `json:"additionalFields"`
		Columns          []string `json:"columns"`
	}
	if err := json.Unmarshal(raw, &declared); err != nil {
		t.Fatalf("x-list-modules: %v", err)
	}
	rowProps := doc.Components.Schemas["ListRow"].Value.Properties
	for code, m := range listModules {
		d, ok := declared[strconv.Itoa(code)]
		if !ok {
			t.Errorf("module %d: missing from x-list-modules", code)
			continue
		}
		if want := slices.Sorted(maps.Keys(m.columns)); !slices.Equal(slices.Sorted(slices.Values(d.Columns)), want) {
			t.Errorf("module %d: x-list-modules columns %v, server has %v", code, d.Columns, want)
		}
		if d.AdditionalFields != (m.fields != 0) {
			t.Errorf("module %d: additionalFields %v, server has ADD_ columns: %v", code, d.AdditionalFields, m.fields != 0)
		}
		for _, c := range d.Columns {
			if _, ok := rowProps[c]; !ok {
				t.Errorf("module %d: column %q is not a property of ListRow", code, c)
			}
		}
	}
	if len(declared) != len(listModules) {
		t.Errorf("x-list-modules has %d modules, the server %d", len(declared), len(listModules))
	}
}
