package impl_test

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// fastPathTests are the tests that serve the universal list and the contact
// list: CRM_FAST_PATH=both runs them a second time through their functions.
const fastPathTests = "List|Contact"

// TestMain runs the tests; with CRM_FAST_PATH=both (make test) it runs them as
// on plain PostgreSQL, then once more in the same process, with the list's
// functions on (newEnv reads CRM_FAST_PATH=on, which plain PostgreSQL does not
// use by itself), the tests of the list and the contact list (fastPathTests),
// or the ones -run chose. One test binary, the race detector's, does both:
// make test used to compile and link impl's tests a second time, without
// -race, for a second process.
func TestMain(m *testing.M) {
	if os.Getenv("CRM_FAST_PATH") != "both" {
		os.Exit(m.Run())
	}
	os.Unsetenv("CRM_FAST_PATH")
	if code := m.Run(); code != 0 {
		os.Exit(code)
	}
	pattern := flag.Lookup("test.run").Value.String()
	if pattern == "" {
		pattern = fastPathTests
		if err := flag.Set("test.run", pattern); err != nil {
			panic(err)
		}
	}
	os.Setenv("CRM_FAST_PATH", "on")
	fmt.Printf("impl: the tests matching %q once more with CRM_FAST_PATH=on (through the list's functions)\n", pattern)
	os.Exit(m.Run())
}
