package db_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lib/pq"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
)

// TestHashInt8 holds the router's hash of an account to PostgreSQL's own
// (hashint8, by which Citus places the account's rows) for edge values and
// random ones of both signs.
func TestHashInt8(t *testing.T) {
	pool := dbtest.New(t)
	values := []int64{0, 1, -1, 2, 42, 1 << 31, -(1 << 31), 1<<32 - 1, 1 << 32, math.MaxInt64, math.MinInt64}
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		values = append(values, r.Int64()-math.MaxInt64/2, int64(r.Uint32()))
	}
	var want []int32
	if err := pool.SelectContext(context.Background(), &want, `SELECT hashint8(v) FROM unnest($1::bigint[]) WITH ORDINALITY AS u (v, n) ORDER BY n`, pq.Array(values)); err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		if got := db.HashInt8(v); got != want[i] {
			t.Errorf("HashInt8(%d) = %d, PostgreSQL's hashint8 %d", v, got, want[i])
		}
	}
}
