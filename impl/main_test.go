package impl_test

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// fastPathTests are the tests that serve the universal list, the contact
// list, the event feed and the dashboards: CRM_FAST_PATH=both runs them a
// second time in their single-table form.
const fastPathTests = "List|Contact|Event|Kpi|KPI|Dashboard"

// TestMain runs the tests, in two ways that make test uses:
//
//   - CRM_TEST_SHARD=i/n runs only every n-th test (and fuzz target's seeds),
//     starting with the i-th, in the order of the source: make test runs
//     impl's tests in two processes at once, since they spend most of their
//     time waiting on PostgreSQL, one test at a time (none calls t.Parallel).
//   - CRM_FAST_PATH=both runs them as on plain PostgreSQL, then once more in
//     the same process, with the list's functions on (newEnv reads
//     CRM_FAST_PATH=on, which plain PostgreSQL does not use by itself), those
//     of the list, the contact list, the event feed and the dashboards
//     (fastPathTests) among the ones chosen.
//     One test binary, the race detector's, does both: make test used to
//     compile and link impl's tests a second time, without -race, for a
//     second process.
func TestMain(m *testing.M) {
	flag.Parse() // the -run given, which the shard narrows (m.Run parses no more)
	names := testNames(m)
	if shard := os.Getenv("CRM_TEST_SHARD"); shard != "" {
		i, n, err := parseShard(shard)
		if err != nil {
			fmt.Fprintln(os.Stderr, "impl tests:", err)
			os.Exit(2)
		}
		switch {
		case len(names) == 0 && i == 1:
			// testing.M no longer shows its tests: the first share runs them all.
			fmt.Println("impl: CRM_TEST_SHARD: cannot list the tests; this share runs them all")
		case len(names) == 0:
			fmt.Println("impl: CRM_TEST_SHARD: cannot list the tests; share 1 runs them all")
			setRun("^$")
		default:
			var mine []string
			for k, name := range names {
				if k%n == i-1 {
					mine = append(mine, name)
				}
			}
			names = mine
			setRun(matching(flag.Lookup("test.run").Value.String(), names))
		}
	}
	if os.Getenv("CRM_FAST_PATH") != "both" {
		os.Exit(m.Run())
	}
	os.Unsetenv("CRM_FAST_PATH")
	if code := m.Run(); code != 0 {
		os.Exit(code)
	}
	run := flag.Lookup("test.run").Value.String()
	again := matching(run, regexpNames(matching(fastPathTests, names), names))
	if len(names) == 0 && run != "^$" { // the tests could not be listed: by the pattern alone
		again = fastPathTests
	}
	if again == "^$" {
		os.Exit(0)
	}
	setRun(again)
	os.Setenv("CRM_FAST_PATH", "on")
	fmt.Printf("impl: the tests of the list, the contact list and the event feed once more with CRM_FAST_PATH=on (through their functions)\n")
	os.Exit(m.Run())
}

// testNames are the names of the binary's tests and fuzz targets, in the
// order of the source. testing.M does not export them; where they cannot be
// read (a changed testing package) none is returned, and share 1 runs every
// test.
func testNames(m *testing.M) []string {
	var names []string
	v := reflect.ValueOf(m).Elem()
	for _, field := range []string{"tests", "fuzzTargets"} {
		f := v.FieldByName(field)
		if !f.IsValid() || f.Kind() != reflect.Slice {
			continue
		}
		for i := range f.Len() {
			if name := f.Index(i).FieldByName("Name"); name.IsValid() && name.Kind() == reflect.String {
				names = append(names, name.String())
			}
		}
	}
	return names
}

func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("CRM_TEST_SHARD %q is not i/n with 1 <= i <= n", s)
	}
	return i, n, nil
}

// matching is a -test.run pattern for those of names that pattern matches
// at the top level ("" matches all); "^$" when none does.
func matching(pattern string, names []string) string {
	top, sub, hasSub := strings.Cut(pattern, "/") // a subtest pattern applies to every chosen test
	re, err := regexp.Compile(top)
	if err != nil {
		return pattern // go test reports it
	}
	var chosen []string
	for _, name := range names {
		if re.MatchString(name) {
			chosen = append(chosen, regexp.QuoteMeta(name))
		}
	}
	if len(chosen) == 0 {
		return "^$"
	}
	out := "^(" + strings.Join(chosen, "|") + ")$"
	if hasSub {
		out += "/" + sub
	}
	return out
}

// regexpNames are the names an anchored pattern of matching chose.
func regexpNames(pattern string, names []string) []string {
	re := regexp.MustCompile(pattern)
	var out []string
	for _, name := range names {
		if re.MatchString(name) {
			out = append(out, name)
		}
	}
	return out
}

func setRun(pattern string) {
	if err := flag.Set("test.run", pattern); err != nil {
		panic(err)
	}
}
