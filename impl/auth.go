package impl

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Roles of users: what part of the account's records they see.
const (
	RoleAdmin  = "admin"  // every record of the account
	RoleHead   = "head"   // records of the users of their department, and their own
	RoleMember = "member" // records they are responsible for
)

// Principal is the owner of the request's token.
type Principal struct {
	TokenID              int64         `db:"token_id"`
	AccountID            int64         `db:"account_id"`
	UserID               int64         `db:"user_id"`
	UserName             string        `db:"user_name"`
	Role                 string        `db:"role"`
	DepartmentID         sql.NullInt64 `db:"department_id"`
	KPIUsersReport       bool          `db:"kpi_users_report"`
	KPIDepartmentsReport bool          `db:"kpi_departments_report"`
	TimeZone             string        `db:"time_zone"`
	BaseCurrency         string        `db:"base_currency"`
}

const principalKey ctxKey = 100

func withPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey, p)
}

// principal returns the token owner of an authenticated request. The validating
// mux authenticates every secured operation before its handler runs, so a
// missing principal is a wiring fault, not a client error.
func principal(ctx context.Context) (*Principal, error) {
	p, ok := ctx.Value(principalKey).(*Principal)
	if !ok {
		return nil, errors.New("impl: no principal in the context of a secured operation")
	}
	return p, nil
}

// NewToken returns a fresh random bearer token and the hash under which it is stored.
func NewToken() (token string, hash []byte) {
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails (Go 1.24+)
	token = "crm_" + base64.RawURLEncoding.EncodeToString(raw[:])
	return token, HashToken(token)
}

// HashToken returns the SHA-256 of a token, the only form in which tokens are stored.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// authenticate resolves the Authorization header to the token's owner.
func (s *Server) authenticate(ctx context.Context, header string) (*Principal, error) {
	scheme, token, found := strings.Cut(header, " ")
	if header == "" || !found || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return nil, &Error{Code: CodeUnauthorized, Msg: "missing bearer token"}
	}
	var p Principal
	err := s.generic.get(ctx, &p, `
		SELECT t.id AS token_id, t.account_id, u.id AS user_id, u.name AS user_name, u.role, u.department_id,
		       u.kpi_users_report, u.kpi_departments_report,
		       coalesce(u.time_zone, a.time_zone) AS time_zone, a.base_currency
		  FROM tokens t
		  JOIN users u ON u.account_id = t.account_id AND u.id = t.user_id
		  JOIN accounts a ON a.id = t.account_id
		 WHERE t.hash = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now()) AND u.active`,
		HashToken(strings.TrimSpace(token)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &Error{Code: CodeUnauthorized, Msg: "unknown, expired or revoked token"}
	}
	if err != nil {
		return nil, fmt.Errorf("look up token: %w", err)
	}
	return &p, nil
}

// sqlArgs collects the arguments of a query as it is built; add returns the
// placeholder of the value it appends. Values never enter the SQL text.
type sqlArgs []any

func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// responsibleFilter is the condition that keeps the records whose responsible
// user (column col) the principal may see.
func (p *Principal) responsibleFilter(col string, args *sqlArgs) string {
	switch {
	case p.Role == RoleAdmin:
		return "TRUE"
	case p.Role == RoleHead && p.DepartmentID.Valid:
		return fmt.Sprintf("(%s = %s OR %s IN (SELECT du.id FROM users du WHERE du.account_id = %s AND du.department_id = %s))",
			col, args.add(p.UserID), col, args.add(p.AccountID), args.add(p.DepartmentID.Int64))
	default:
		return fmt.Sprintf("%s = %s", col, args.add(p.UserID))
	}
}

// rateLimiter is a token bucket per bearer token, kept in the process. Each
// process of a deployment limits on its own, so the effective limit behind a load
// balancer is the per-process one times the number of processes.
type rateLimiter struct {
	rate  float64 // tokens per second; 0: no limit
	burst float64
	mu    sync.Mutex
	seen  map[int64]*bucket
	sweep time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newRateLimiter(rate float64, burst int) *rateLimiter {
	if burst < 1 {
		burst = int(math.Max(1, math.Ceil(rate)))
	}
	return &rateLimiter{rate: rate, burst: float64(burst), seen: map[int64]*bucket{}}
}

// allow takes one request from the token's bucket; when the bucket is empty it
// reports how many whole seconds to wait.
func (l *rateLimiter) allow(tokenID int64, now time.Time) (retryAfter int, limited bool) {
	if l.rate <= 0 {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.sweep) > time.Minute { // forget tokens idle long enough to be full again
		for id, b := range l.seen {
			if now.Sub(b.last).Seconds()*l.rate >= l.burst {
				delete(l.seen, id)
			}
		}
		l.sweep = now
	}
	b := l.seen[tokenID]
	if b == nil {
		b = &bucket{tokens: l.burst, last: now}
		l.seen[tokenID] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		return int(math.Ceil((1 - b.tokens) / l.rate)), true
	}
	b.tokens--
	return 0, false
}

func (l *rateLimiter) message() string {
	return fmt.Sprintf("rate limit exceeded: %g requests per second per token", l.rate)
}
