package impl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
)

// Idempotency keys (openapi.yaml, info.description, "Idempotency"), with
// Stripe's semantics. A write that carries an Idempotency-Key runs inside a
// transaction opened here (the ambient transaction, which inTx joins through a
// savepoint): the key's row is inserted first, the handler writes, its reply
// is recorded in the row, and all of it commits at once. So a reply is either
// stored with its write or neither exists, and a crash between the commit and
// the reply loses nothing a retry cannot get back.
//
//   - Same key, same request (method, path, canonical query, body) within 24
//     hours: the stored reply, with Idempotent-Replayed: true; nothing runs.
//   - Same key, another request: "400".
//   - Same key while the first request still runs: the second waits for it
//     (its INSERT waits on the uncommitted row), within the request's own
//     deadline, then replays its reply, or runs itself if the first stored
//     nothing.
//   - Replies of 5xx (and code "500"/"503") are not stored: the write was not
//     made, and a retry should run again. Every other reply of the handler is
//     stored, failures included, so that a retry sees what the first saw.
//     Requests refused before the handler (authentication, rate limit,
//     validation) store nothing.
//   - Keys belong to the account and token that used them; rows older than 24
//     hours are ignored, overwritten when the key comes again, and purged for
//     every account in the background (PurgeIdempotencyKeys), in batches.
//   - A reply that returned a secret (the handler said so, markSecretReply) is
//     stored sealed with the server's secret box, as the secret itself is, and
//     a replay opens it: the client that lost the first reply gets the secret,
//     and the database holds no secret in clear.

// idempotencyTTL is how long a key's reply is kept.
const idempotencyTTL = "24 hours"

// IdempotencyFault is the value of Config.Fault that makes the process exit
// right after committing a write made with an Idempotency-Key, before its
// reply is written: for the test that the replay survives such a crash.
const IdempotencyFault = "idempotency-after-commit"

const ambientTxKey ctxKey = 200

// ambientTx is the transaction that the request's writes join, if any.
func ambientTx(ctx context.Context) *sqlx.Tx {
	tx, _ := ctx.Value(ambientTxKey).(*sqlx.Tx)
	return tx
}

// requestHash is SHA-256 over what makes two requests the same: the method,
// the path, the query with its parameters in a canonical order and the body.
func requestHash(r *http.Request, body []byte) []byte {
	q, _ := url.ParseQuery(r.URL.RawQuery) // parsed already by checkQuery
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", r.Method, r.URL.Path, q.Encode())
	h.Write(body)
	return h.Sum(nil)
}

// idempotentReplyUse binds a sealed stored reply to its use in the secret box.
const idempotentReplyUse = "idempotent-reply"

// markSecretReply tells the layers around an operation that its reply holds a
// secret (a webhook's signing secret), which must not be stored in clear.
func markSecretReply(ctx context.Context) {
	if info := infoFrom(ctx); info != nil {
		info.secretReply = true
	}
}

// replyRecorder keeps the handler's reply, to be stored before it is sent.
type replyRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (rr *replyRecorder) Header() http.Header { return rr.header }

func (rr *replyRecorder) WriteHeader(status int) {
	if rr.status == 0 {
		rr.status = status
	}
}

func (rr *replyRecorder) Write(b []byte) (int, error) {
	if rr.status == 0 {
		rr.status = http.StatusOK
	}
	return rr.body.Write(b)
}

// send writes the recorded reply to w.
func (rr *replyRecorder) send(w http.ResponseWriter) {
	for k, v := range rr.header {
		w.Header()[k] = v
	}
	w.WriteHeader(cmp0(rr.status, http.StatusOK))
	_, _ = w.Write(rr.body.Bytes())
}

func cmp0(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// storable reports whether a reply is kept for replays: not a 5xx, and not
// code "500" or "503" in an envelope.
func storable(status int, body []byte) bool {
	if status >= 500 {
		return false
	}
	var env struct {
		Code *string `json:"code"`
	}
	if json.Unmarshal(body, &env) != nil {
		return false
	}
	return env.Code == nil || (*env.Code != CodeInternal && *env.Code != CodeNotReady)
}

// serveIdempotent runs the write of op under the Idempotency-Key key, or
// replays the reply stored for it.
func (s *Server) serveIdempotent(w http.ResponseWriter, r *http.Request, p *Principal, key string, body []byte, next func(http.ResponseWriter, *http.Request)) {
	ctx := r.Context()
	hash := requestHash(r, body)
	tx, err := s.db(ctx).BeginTxx(ctx, nil)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("begin: %w", err))
		return
	}
	defer tx.Rollback()
	if err := setStatementTimeout(ctx, tx); err != nil { // the write joins this transaction, not one of inTx's own
		s.writeError(w, r, err)
		return
	}
	// Claims the key, or finds it taken. A request still running under the key
	// holds its row uncommitted, so this waits for it to end.
	// An expired key is free again. (Two statements: Citus refuses now() in
	// the SET and WHERE of an ON CONFLICT on a distributed table.)
	if _, err := tx.ExecContext(ctx, `
		DELETE FROM idempotency_keys
		 WHERE account_id = $1 AND token_id = $2 AND key = $3 AND created_at < now() - interval '`+idempotencyTTL+`'`,
		p.AccountID, p.TokenID, key); err != nil {
		s.writeError(w, r, fmt.Errorf("free an expired idempotency key: %w", err))
		return
	}
	res, err := tx.ExecContext(ctx, `
		INSERT INTO idempotency_keys (account_id, token_id, key, request_hash)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (account_id, token_id, key) DO NOTHING`,
		p.AccountID, p.TokenID, key, hash)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("claim idempotency key: %w", err))
		return
	}
	if n, err := res.RowsAffected(); err != nil {
		s.writeError(w, r, fmt.Errorf("claim idempotency key: %w", err))
		return
	} else if n == 0 {
		s.replay(w, r, tx, p, key, hash)
		return
	}
	rec := &replyRecorder{header: http.Header{}}
	next(rec, r.WithContext(context.WithValue(ctx, ambientTxKey, tx)))
	if !storable(rec.status, rec.body.Bytes()) {
		_ = tx.Rollback()
		rec.send(w)
		return
	}
	reply, sealed := rec.body.Bytes(), false
	if info := infoFrom(ctx); info != nil && info.secretReply {
		if s.secrets == nil { // cannot happen: an operation returns a secret only with the key
			s.writeError(w, r, errors.New("a reply with a secret and no secret box to seal it"))
			return
		}
		reply, sealed = s.secrets.Seal(p.AccountID, idempotentReplyUse, string(reply)), true
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE idempotency_keys SET http_status = $4, reply = $5, reply_sealed = $6
		 WHERE account_id = $1 AND token_id = $2 AND key = $3`,
		p.AccountID, p.TokenID, key, cmp0(rec.status, http.StatusOK), reply, sealed); err != nil {
		s.writeError(w, r, fmt.Errorf("store the reply of idempotency key: %w", err))
		return
	}
	if err := tx.Commit(); err != nil {
		s.writeError(w, r, fmt.Errorf("commit: %w", err))
		return
	}
	if s.fault == IdempotencyFault {
		s.log.ErrorContext(ctx, "fault point: exiting after the commit of an idempotent write, before its reply", "fault", s.fault)
		os.Exit(3)
	}
	rec.send(w)
}

// errSealedReply is the reply to a replay whose stored reply holds a secret
// sealed under another CRM_SECRET_KEY than the server's.
var errSealedReply = &Error{Code: CodeNotReady,
	Msg: "the reply stored for this Idempotency-Key holds a secret that this server's CRM_SECRET_KEY cannot decrypt"}

// replay answers the reply stored under key, or "400" when the key was used
// for another request.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, tx *sqlx.Tx, p *Principal, key string, hash []byte) {
	var stored struct {
		Hash   []byte `db:"request_hash"`
		Status *int   `db:"http_status"`
		Reply  []byte `db:"reply"`
		Sealed bool   `db:"reply_sealed"`
	}
	err := tx.GetContext(r.Context(), &stored, `
		SELECT request_hash, http_status, reply, reply_sealed FROM idempotency_keys
		 WHERE account_id = $1 AND token_id = $2 AND key = $3`, p.AccountID, p.TokenID, key)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("read idempotency key: %w", err))
		return
	}
	_ = tx.Rollback()
	if !bytes.Equal(stored.Hash, hash) {
		s.writeError(w, r, badRequest("header parameter \"Idempotency-Key\": the key was used with another request (method, path, query or body) within 24 hours; use a new key for a new request"))
		return
	}
	if stored.Status == nil { // cannot happen: a claimed row commits with its reply
		s.writeError(w, r, fmt.Errorf("idempotency key without a reply"))
		return
	}
	if stored.Sealed {
		if s.secrets == nil {
			s.writeError(w, r, errNoSecretKey)
			return
		}
		opened, err := s.secrets.Open(p.AccountID, idempotentReplyUse, stored.Reply)
		if err != nil {
			s.writeError(w, r, errSealedReply)
			return
		}
		stored.Reply = []byte(opened)
	}
	var env struct {
		Code *string `json:"code"`
	}
	if json.Unmarshal(stored.Reply, &env) == nil && env.Code != nil {
		setRequestCode(r.Context(), *env.Code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Idempotent-Replayed", "true")
	w.WriteHeader(*stored.Status)
	_, _ = w.Write(stored.Reply)
}

// IdempotencyPurgeBatch is how many expired keys one round of the purge
// deletes at most (PurgeIdempotencyKeys).
const IdempotencyPurgeBatch = 1000

// PurgeIdempotencyKeys deletes the oldest expired idempotency keys of every
// account, at most about batch of them (keys of one account made in the same
// microsecond as the batch's last may join it), and returns how many it
// deleted. It reads which in one statement across accounts, then deletes
// them with one statement per account, on its shard.
func PurgeIdempotencyKeys(ctx context.Context, db *sqlx.DB, batch int) (int, error) {
	var expired []struct {
		AccountID int64     `db:"account_id"`
		CreatedAt time.Time `db:"created_at"`
	}
	// cross-account: the oldest expired keys of every account, for the purge
	// in the background; each account's are then deleted on its own shard.
	err := scanAccounts(ctx, db, &expired, `
		SELECT account_id, created_at FROM idempotency_keys
		 WHERE created_at < now() - interval '`+idempotencyTTL+`'
		 ORDER BY created_at
		 LIMIT $1`, batch)
	if err != nil {
		return 0, fmt.Errorf("find expired idempotency keys: %w", err)
	}
	// The batch holds every key of an account up to the latest of it in the
	// batch: they are all older than the batch's newest.
	upTo := map[int64]time.Time{}
	for _, k := range expired {
		if k.CreatedAt.After(upTo[k.AccountID]) {
			upTo[k.AccountID] = k.CreatedAt
		}
	}
	deleted := 0
	for _, account := range slices.Sorted(maps.Keys(upTo)) {
		res, err := db.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE account_id = $1 AND created_at <= $2`,
			account, upTo[account])
		if err != nil {
			return deleted, fmt.Errorf("purge the expired idempotency keys of account %d: %w", account, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return deleted, fmt.Errorf("purge the expired idempotency keys of account %d: %w", account, err)
		}
		deleted += int(n)
	}
	return deleted, nil
}

// RunIdempotencyPurge purges expired idempotency keys of every account until
// ctx ends: a batch (IdempotencyPurgeBatch) at a time, the next at once while
// batches come full, otherwise after interval (1 minute when 0); with backoff
// while the database fails (runRounds).
func RunIdempotencyPurge(ctx context.Context, db *sqlx.DB, log *slog.Logger, interval time.Duration) {
	if interval <= 0 {
		interval = time.Minute
	}
	runRounds(ctx, log, "idempotency key purge", interval, func(ctx context.Context) (int, error) {
		n, err := PurgeIdempotencyKeys(ctx, db, IdempotencyPurgeBatch)
		if n > 0 {
			log.Debug("purged expired idempotency keys", "keys", n)
		}
		if n < IdempotencyPurgeBatch {
			return 0, err // the backlog is gone: wait
		}
		return n, err
	})
}
