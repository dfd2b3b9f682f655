package impl

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
	"time"
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
	AccountTimeZone      string        `db:"account_time_zone"` // the account's own, whatever the user's
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

// A bearer token names its account in its own text, so that its lookup runs
// where the account's rows are (one shard on Citus), and carries a checksum, so
// that a mistyped or made-up token is refused without a lookup and secret
// scanners can tell a real one from noise:
//
//	crm_{account id}_{43 base62 characters of secret}{6 base62 characters of CRC-32}
//
// Only the SHA-256 of the whole token is stored. Tokens issued before this
// format ("crm_" and 43 characters of Base64url, no account) are legacy tokens:
// the table legacy_tokens routes their hash to the account (see authenticate).
const (
	tokenPrefix       = "crm_"
	tokenSecretLen    = 43 // base62 digits: 43 × log2(62) ≈ 256 bits
	tokenChecksumLen  = 6  // base62 digits of a CRC-32: 62^6 > 2^32
	legacyTokenLength = len(tokenPrefix) + 43
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewToken returns a fresh random bearer token of the account and the hash under
// which it is stored.
func NewToken(accountID int64) (token string, hash []byte) {
	secret := make([]byte, 0, tokenSecretLen)
	var buf [64]byte
	for len(secret) < tokenSecretLen {
		_, _ = rand.Read(buf[:]) // crypto/rand.Read never fails (Go 1.24+)
		for _, b := range buf {
			// 248 = 4 × 62: rejecting the bytes above keeps every digit equally likely.
			if b < 248 && len(secret) < tokenSecretLen {
				secret = append(secret, base62[b%62])
			}
		}
	}
	body := tokenPrefix + strconv.FormatInt(accountID, 10) + "_" + string(secret)
	token = body + tokenChecksum(body)
	return token, HashToken(token)
}

// tokenChecksum is the CRC-32 of a token's body in base62 digits.
func tokenChecksum(body string) string {
	sum := crc32.ChecksumIEEE([]byte(body))
	var out [tokenChecksumLen]byte
	for i := tokenChecksumLen - 1; i >= 0; i-- {
		out[i] = base62[sum%62]
		sum /= 62
	}
	return string(out[:])
}

// TokenAccount returns the account a token names, and legacy = true for a
// token of the old format that names none. ok is false for text that is no
// token of this server: its checksum or form is wrong.
func TokenAccount(token string) (accountID int64, legacy, ok bool) {
	rest, found := strings.CutPrefix(token, tokenPrefix)
	if !found {
		return 0, false, false
	}
	if len(token) == legacyTokenLength {
		for i := 0; i < len(rest); i++ {
			if !isBase64URL(rest[i]) {
				return 0, false, false
			}
		}
		return 0, true, true
	}
	digits, secret, found := strings.Cut(rest, "_")
	if !found || len(secret) != tokenSecretLen+tokenChecksumLen || len(digits) == 0 || len(digits) > 19 || digits[0] == '0' {
		return 0, false, false
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || id <= 0 {
		return 0, false, false
	}
	for i := 0; i < len(secret); i++ {
		if strings.IndexByte(base62, secret[i]) < 0 {
			return 0, false, false
		}
	}
	cut := len(token) - tokenChecksumLen
	if tokenChecksum(token[:cut]) != token[cut:] {
		return 0, false, false
	}
	return id, false, true
}

func isBase64URL(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// HashToken returns the SHA-256 of a token, the only form in which tokens are stored.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// tokenLastUsedEvery is how often a token's last_used_at is written: at most
// once a minute per token and process, so that `crm-server token list` can
// tell tokens in use from forgotten ones without a write per request.
const tokenLastUsedEvery = time.Minute

// touchToken records that a token authenticated a request. It is best
// effort: a failure to record it does not refuse the request, whose own
// statements tell of a database that is down.
func (s *Server) touchToken(ctx context.Context, accountID, tokenID int64) {
	_, _ = s.db(ctx).ExecContext(ctx, `
		UPDATE tokens SET last_used_at = now()
		 WHERE account_id = $1 AND id = $2 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
		accountID, tokenID)
}

// errBadToken is the 401 of a token that is unknown, expired or revoked, or
// whose user is deactivated: the reply does not tell them apart.
var errBadToken = &Error{Code: CodeUnauthorized, Msg: "unknown, expired or revoked token"}

var errNoToken = &Error{Code: CodeUnauthorized, Msg: "missing bearer token"}

// authenticate resolves the request's Authorization header to the token's
// owner, from the token cache (tokencache.go) when the token was verified within
// the last second, else by its lookup. The account named in the token leads every statement, so each reads
// one shard. Each failure counts against the client address (limits.authFailed),
// and past its limit a token that only the lookup could tell valid is refused
// before the lookup (limits.beforeLookup).
func (s *Server) authenticate(r *http.Request) (*Principal, error) {
	ctx := r.Context()
	header := r.Header.Get("Authorization")
	scheme, token, found := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if header == "" || !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, s.limits.authFailed(r, errNoToken)
	}
	accountID, legacy, ok := TokenAccount(token)
	if !ok {
		return nil, s.limits.authFailed(r, errBadToken)
	}
	hash := HashToken(token)
	checked := time.Now()
	if p, ok := s.tokens.get(hash, checked); ok {
		return p, nil
	}
	if err := s.limits.beforeLookup(r, hash); err != nil {
		return nil, err
	}
	if legacy {
		err := s.generic(ctx).get(ctx, &accountID, `SELECT account FROM legacy_tokens WHERE hash = $1`, hash)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, s.limits.authFailed(r, errBadToken)
		}
		if err != nil {
			return nil, fmt.Errorf("look up legacy token: %w", err)
		}
	}
	// The lookup reads the account's node (a legacy token's account comes
	// from legacy_tokens, a reference table every node holds).
	ctx = withAccount(ctx, accountID)
	var row struct {
		Principal
		Expires  sql.NullTime `db:"expires_at"`
		LastUsed sql.NullTime `db:"last_used_at"`
		Now      time.Time    `db:"now"`
	}
	err := s.generic(ctx).get(ctx, &row, `
		SELECT t.id AS token_id, t.account_id, t.expires_at, t.last_used_at, now() AS now, u.id AS user_id, u.name AS user_name, u.role, u.department_id,
		       u.kpi_users_report, u.kpi_departments_report,
		       coalesce(u.time_zone, a.time_zone) AS time_zone, a.time_zone AS account_time_zone, a.base_currency
		  FROM tokens t
		  JOIN users u ON u.account_id = $1 AND u.id = t.user_id
		  JOIN accounts a ON a.id = $1
		 WHERE t.account_id = $1 AND t.hash = $2 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())
		   AND u.active`, accountID, hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, s.limits.authFailed(r, errBadToken)
	}
	if err != nil {
		return nil, fmt.Errorf("look up token: %w", err)
	}
	s.limits.authenticated(ctx, hash)
	p := row.Principal
	if !row.LastUsed.Valid || row.Now.Sub(row.LastUsed.Time) >= tokenLastUsedEvery {
		s.touchToken(ctx, p.AccountID, p.TokenID)
	}
	s.tokens.put(hash, &p, row.Expires.Time, checked)
	return &p, nil
}
