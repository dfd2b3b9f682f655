package db_test

import (
	"context"
	"os"
	"testing"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
)

// TestCitusVersionRegression holds which releases have the local plan
// cache's regression by their number: 13.2.1 and 13.2.2; 13.2.0 and earlier
// predate it; later ones are for the probe to judge.
func TestCitusVersionRegression(t *testing.T) {
	for _, c := range []struct {
		text string
		want db.PlanCacheRegression
	}{
		{"Citus 13.2.2 on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit gitref: v13.2.2-dirty", db.RegressionAffected},
		{"Citus 13.2.1 on x86_64-pc-linux-gnu", db.RegressionAffected},
		{"Citus 13.2.0 on x86_64-pc-linux-gnu", db.RegressionAbsent},
		{"Citus 13.1.0 on aarch64-unknown-linux-gnu", db.RegressionAbsent},
		{"Citus 12.1.5 on x86_64-pc-linux-gnu", db.RegressionAbsent},
		{"Citus 13.2.3 on x86_64-pc-linux-gnu", db.RegressionUnknown},
		{"Citus 13.3.0 on x86_64-pc-linux-gnu", db.RegressionUnknown},
		{"Citus 14.0.0 on x86_64-pc-linux-gnu", db.RegressionUnknown},
		{"Citus 13.2 on x86_64-pc-linux-gnu", db.RegressionAbsent},
	} {
		v, err := db.ParseCitusVersion(c.text)
		if err != nil {
			t.Errorf("ParseCitusVersion(%q): %v", c.text, err)
			continue
		}
		if got := v.LocalPlanCacheRegression(); got != c.want {
			t.Errorf("%s: regression %d, want %d", v, got, c.want)
		}
	}
	for _, bad := range []string{"", "PostgreSQL 15.2", "Citus on x86_64"} {
		if v, err := db.ParseCitusVersion(bad); err == nil {
			t.Errorf("ParseCitusVersion(%q) = %s, want an error", bad, v)
		}
	}
}

// TestCitusLocalPlanCacheProbe runs the probe of crm-server db citus check on
// the Citus of make test-citus, which must be a build with upstream PR #8824's
// fix (or 13.2.0): the session's memory stays flat. CRM_CITUS_EXPECT_LEAK=1
// expects the leak instead (a stock 13.2.1 or 13.2.2).
func TestCitusLocalPlanCacheProbe(t *testing.T) {
	url := dbtest.NewURL(t)
	ctx := context.Background()
	coord, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	if citus, err := db.IsCitus(ctx, coord); err != nil {
		t.Fatal(err)
	} else if !citus {
		t.Skip("the database has no citus extension: make test-citus runs this test")
	}
	p, err := db.ProbeLocalPlanCache(ctx, coord, url, nil, 300)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("on %s: %.0f bytes per execution, %s each", p.Node, p.BytesPerExec, p.PerExec)
	if want := os.Getenv("CRM_CITUS_EXPECT_LEAK") == "1"; p.Leaks() != want {
		t.Errorf("the probe found a leak: %t, want %t (%.0f bytes per execution on %s)", p.Leaks(), want, p.BytesPerExec, p.Node)
	}
}
