package impl

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
	"github.com/crmservice/crm/impl/webhook"
)

// Webhook subscriptions (admins only) and their delivery log. The deliveries
// themselves are made by the WebhookWorker (webhookworker.go); the test
// delivery of POST /webhook/test is made here, in the request.

// webhookSecretUse binds a sealed webhook secret to its use in the secret box.
const webhookSecretUse = "webhook"

// errNoSecretKey is the reply of the webhook operations that must encrypt or
// decrypt a secret on a server without CRM_SECRET_KEY.
var errNoSecretKey = &Error{Code: CodeNotReady,
	Msg: "webhooks are not available: the server has no CRM_SECRET_KEY to encrypt their secrets"}

// webhookNotFound is the error of a subscription of another account, or none.
func webhookNotFound(id int64) *Error { return notFound("webhook %d not found", id) }

// webhookFields is what the journal records of a subscription (never its secret).
type webhookFields struct {
	URL         string   `json:"url"`
	Modules     []int64  `json:"modules"`
	Actions     []string `json:"actions"`
	Description string   `json:"description"`
	Active      bool     `json:"active"`
}

func modulesOf(m *gen.WebhookModules) []int64 {
	out := []int64{}
	for _, v := range deref(m) {
		out = append(out, int64(v))
	}
	slices.Sort(out)
	return out
}

func actionsOf(a *gen.WebhookActions) []string {
	out := []string{}
	for _, v := range deref(a) {
		out = append(out, string(v))
	}
	slices.Sort(out)
	return out
}

// checkWebhookURL answers a 400 naming url when the guard refuses it.
func (s *Server) checkWebhookURL(ctx context.Context, u string) error {
	if err := s.hookGuard.CheckURL(ctx, u); err != nil {
		return badRequest("url: %s", err.Error())
	}
	return nil
}

// sealWebhookSecret checks a given secret (or makes one) and seals it.
func (s *Server) sealWebhookSecret(accountID int64, given *string) (plain string, sealed []byte, err error) {
	plain = webhook.NewSecret()
	if given != nil {
		if _, err := webhook.ParseSecret(*given); err != nil {
			return "", nil, badRequest("secret: %s", err.Error())
		}
		plain = *given
	}
	return plain, s.secrets.Seal(accountID, webhookSecretUse, plain), nil
}

// webhookSecretReply is the value of insert and update.
func webhookSecretReply(id int64, secret string) string {
	v := struct {
		ID     int64   `json:"id"`
		Secret *string `json:"secret"`
	}{ID: id}
	if secret != "" {
		v.Secret = &secret
	}
	return jsonText(v)
}

// WebhookInsert implements POST /webhook/insert (admins).
func (s *Server) WebhookInsert(ctx context.Context, req gen.WebhookInsertRequestObject) (gen.WebhookInsertResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.requireAdmin(); err != nil {
		return nil, err
	}
	if s.secrets == nil {
		return nil, errNoSecretKey
	}
	in := req.Body
	if err := s.checkWebhookURL(ctx, in.Url); err != nil {
		return nil, err
	}
	secret, sealed, err := s.sealWebhookSecret(p.AccountID, in.Secret)
	if err != nil {
		return nil, err
	}
	f := webhookFields{URL: in.Url, Modules: modulesOf(in.Modules), Actions: actionsOf(in.Actions), Description: str(in.Description), Active: true}
	var id int64
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		// Deliveries start after the events committed so far.
		var position int64
		err := tx.GetContext(ctx, &position, `SELECT coalesce(max(last), 0) FROM event_counters WHERE account_id = $1`, p.AccountID)
		if err != nil {
			return fmt.Errorf("read the event counter: %w", err)
		}
		err = tx.GetContext(ctx, &id, `
			INSERT INTO webhooks (account_id, url, modules, actions, description, secret, position, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			RETURNING id`,
			p.AccountID, f.URL, pq.Array(f.Modules), pq.Array(f.Actions), f.Description, sealed, position, p.UserID)
		if err != nil {
			return fmt.Errorf("insert webhook: %w", err)
		}
		return writeJournal(ctx, tx, p, []journalEntry{{ModuleWebhooks, "webhook", id, "insert", f}})
	})
	if err != nil {
		return nil, dbError(err)
	}
	markSecretReply(ctx)
	return gen.WebhookInsert200JSONResponse{Body: success(webhookSecretReply(id, secret))}, nil
}

// WebhookList implements GET /webhook/list (admins).
func (s *Server) WebhookList(ctx context.Context, req gen.WebhookListRequestObject) (gen.WebhookListResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.requireAdmin(); err != nil {
		return nil, err
	}
	env, err := s.quickList(ctx, sqlFor(p), `
		SELECT count(*) AS rows,
		       coalesce(jsonb_agg(jsonb_build_object(
		           'id', w.id, 'url', w.url, 'modules', to_jsonb(w.modules), 'actions', to_jsonb(w.actions),
		           'description', w.description, 'active', w.active, 'disabled_reason', w.disabled_reason,
		           'disabled_at', to_char(w.disabled_at AT TIME ZONE {tz}::text, 'YYYY-MM-DD HH24:MI:SS'),
		           'failing_since', to_char(w.failing_since AT TIME ZONE {tz}::text, 'YYYY-MM-DD HH24:MI:SS'),
		           'created', to_char(w.created_at AT TIME ZONE {tz}::text, 'YYYY-MM-DD HH24:MI:SS'))
		         ORDER BY w.id DESC), '[]')::text AS value
		  FROM webhooks w WHERE w.account_id = {acc}`)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	return gen.WebhookList200JSONResponse(env), nil
}

// storedWebhook is a subscription as the update reads it.
type storedWebhook struct {
	URL         string         `db:"url"`
	Modules     pq.Int64Array  `db:"modules"`
	Actions     pq.StringArray `db:"actions"`
	Description string         `db:"description"`
	Active      bool           `db:"active"`
}

// WebhookUpdate implements POST /webhook/update (admins).
func (s *Server) WebhookUpdate(ctx context.Context, req gen.WebhookUpdateRequestObject) (gen.WebhookUpdateResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.requireAdmin(); err != nil {
		return nil, err
	}
	in := req.Body
	newSecret := in.Secret != nil || in.RotateSecret != nil && *in.RotateSecret
	if newSecret && s.secrets == nil {
		return nil, errNoSecretKey
	}
	if in.Url != nil {
		if err := s.checkWebhookURL(ctx, *in.Url); err != nil {
			return nil, err
		}
	}
	var secret string
	var sealed []byte
	if newSecret {
		if secret, sealed, err = s.sealWebhookSecret(p.AccountID, in.Secret); err != nil {
			return nil, err
		}
	}
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		var old storedWebhook
		err := tx.GetContext(ctx, &old, `SELECT url, modules, actions, description, active FROM webhooks
			WHERE account_id = $1 AND id = $2 FOR UPDATE`, p.AccountID, in.Id)
		if errors.Is(err, sql.ErrNoRows) {
			return webhookNotFound(in.Id)
		}
		if err != nil {
			return fmt.Errorf("read webhook %d: %w", in.Id, err)
		}
		u := newSQL()
		var set []string
		changes := map[string][2]any{}
		if in.Url != nil && *in.Url != old.URL {
			set = append(set, "url = "+u.arg(*in.Url))
			changes["url"] = [2]any{old.URL, *in.Url}
		}
		if in.Modules != nil {
			if m := modulesOf(in.Modules); !slices.Equal(m, old.Modules) {
				set = append(set, "modules = "+u.arg(pq.Array(m)))
				changes["modules"] = [2]any{[]int64(old.Modules), m}
			}
		}
		if in.Actions != nil {
			if a := actionsOf(in.Actions); !slices.Equal(a, old.Actions) {
				set = append(set, "actions = "+u.arg(pq.Array(a)))
				changes["actions"] = [2]any{[]string(old.Actions), a}
			}
		}
		if in.Description != nil && *in.Description != old.Description {
			set = append(set, "description = "+u.arg(*in.Description))
			changes["description"] = [2]any{old.Description, *in.Description}
		}
		if in.Active != nil && *in.Active != old.Active {
			changes["active"] = [2]any{old.Active, *in.Active}
			if *in.Active {
				// Resumed: the event at the head gets a new day of attempts, now.
				set = append(set, "active = true", "disabled_reason = ''", "disabled_at = NULL", "attempts = 0",
					"failing_since = NULL", "next_attempt_at = now()")
			} else {
				set = append(set, "active = false")
			}
		}
		if newSecret {
			set = append(set, "secret = "+u.arg(sealed))
			changes["secret"] = [2]any{"(hidden)", "(changed)"}
		}
		if len(set) == 0 {
			return nil
		}
		u.set("set", strings.Join(set, ", "))
		if _, err := tx.ExecContext(ctx, u.expand(`UPDATE webhooks SET {set} WHERE account_id = `+u.arg(p.AccountID)+
			` AND id = `+u.arg(in.Id)), u.args...); err != nil {
			return fmt.Errorf("update webhook %d: %w", in.Id, err)
		}
		return writeJournal(ctx, tx, p, []journalEntry{{ModuleWebhooks, "webhook", in.Id, "update", changes}})
	})
	if err != nil {
		return nil, dbError(err)
	}
	if secret != "" {
		markSecretReply(ctx)
	}
	return gen.WebhookUpdate200JSONResponse{Body: success(webhookSecretReply(in.Id, secret))}, nil
}

// WebhookDelete implements POST /webhook/delete (admins).
func (s *Server) WebhookDelete(ctx context.Context, req gen.WebhookDeleteRequestObject) (gen.WebhookDeleteResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.requireAdmin(); err != nil {
		return nil, err
	}
	id := req.Body.Id
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		var url string
		err := tx.GetContext(ctx, &url, `DELETE FROM webhooks WHERE account_id = $1 AND id = $2 RETURNING url`, p.AccountID, id)
		if errors.Is(err, sql.ErrNoRows) {
			return webhookNotFound(id)
		}
		if err != nil {
			return fmt.Errorf("delete webhook %d: %w", id, err)
		}
		return writeJournal(ctx, tx, p, []journalEntry{{ModuleWebhooks, "webhook", id, "delete", map[string]any{"url": url}}})
	})
	if err != nil {
		return nil, err
	}
	return gen.WebhookDelete200JSONResponse{Body: success("1")}, nil
}

// WebhookDeliveries implements GET /webhook/deliveries (admins): the log of a
// subscription, newest first, paged.
func (s *Server) WebhookDeliveries(ctx context.Context, req gen.WebhookDeliveriesRequestObject) (gen.WebhookDeliveriesResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.requireAdmin(); err != nil {
		return nil, err
	}
	perPage, page := 50, 1
	if req.Params.RecordsOnpage != nil {
		perPage = *req.Params.RecordsOnpage
	}
	if req.Params.Page != nil {
		page = *req.Params.Page
	}
	q := sqlFor(p)
	q.bind("webhook", req.Params.WebhookId)
	q.bind("limit", perPage)
	q.bind("offset", (page-1)*perPage)
	var out struct {
		Found bool   `db:"found"`
		Rows  int    `db:"rows"`
		Value string `db:"value"`
	}
	err = s.db(ctx).GetContext(ctx, &out, q.expand(`
		SELECT EXISTS (SELECT 1 FROM webhooks w WHERE w.account_id = {acc} AND w.id = {webhook}) AS found,
		       (SELECT count(*) FROM webhook_deliveries d WHERE d.account_id = {acc} AND d.webhook_id = {webhook}) AS rows,
		       coalesce((SELECT json_agg(json_build_object('id', d.id, 'event_id', d.event_id, 'type', d.type,
		                    'attempt', d.attempt, 'outcome', d.outcome, 'status_code', d.status_code, 'error', d.error,
		                    'duration_ms', d.duration_ms, 'date', to_char(d.at AT TIME ZONE {tz}::text, 'YYYY-MM-DD HH24:MI:SS'))
		                    ORDER BY d.id DESC)
		                   FROM (SELECT * FROM webhook_deliveries d WHERE d.account_id = {acc} AND d.webhook_id = {webhook}
		                          ORDER BY d.id DESC LIMIT {limit} OFFSET {offset}) d), '[]')::text AS value`), q.args...)
	if err != nil {
		return nil, fmt.Errorf("read deliveries of webhook %d: %w", req.Params.WebhookId, err)
	}
	if !out.Found {
		return nil, webhookNotFound(req.Params.WebhookId)
	}
	return gen.WebhookDeliveries200JSONResponse(successList(out.Value, out.Rows, page, perPage)), nil
}

// WebhookTest implements POST /webhook/test (admins): one signed delivery of a
// webhook.test event, now, answered with its outcome.
func (s *Server) WebhookTest(ctx context.Context, req gen.WebhookTestRequestObject) (gen.WebhookTestResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.requireAdmin(); err != nil {
		return nil, err
	}
	if s.secrets == nil {
		return nil, errNoSecretKey
	}
	id := req.Body.Id
	var hook struct {
		URL    string `db:"url"`
		Secret []byte `db:"secret"`
	}
	err = s.db(ctx).GetContext(ctx, &hook, `SELECT url, secret FROM webhooks WHERE account_id = $1 AND id = $2`, p.AccountID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, webhookNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("read webhook %d: %w", id, err)
	}
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	msg := webhook.Message{ID: "test_" + hex.EncodeToString(nonce)}
	msg.Body, _ = json.Marshal(map[string]any{"type": "webhook.test", "timestamp": nowRFC3339(), "data": map[string]any{"webhook_id": id}})
	res := s.deliverSealed(ctx, p.AccountID, hook.URL, hook.Secret, msg)
	outcome := "test"
	if !res.Delivered {
		outcome = "test_failed"
	}
	// In the Idempotency-Key's transaction when there is one (inTx joins it):
	// the delivery row commits with the stored reply, or neither does.
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `
			INSERT INTO webhook_deliveries (account_id, webhook_id, event_id, type, attempt, outcome, status_code, error, duration_ms)
			VALUES ($1, $2, NULL, 'webhook.test', 1, $3, $4, $5, $6)`,
			p.AccountID, id, outcome, nullStatus(res.StatusCode), errorText(res.Error), res.Duration.Milliseconds())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("log the test delivery of webhook %d: %w", id, err)
	}
	value := jsonText(struct {
		Delivered  bool   `json:"delivered"`
		StatusCode *int   `json:"status_code"`
		Error      string `json:"error"`
		DurationMS int64  `json:"duration_ms"`
		WebhookID  string `json:"webhook_id"`
	}{res.Delivered, nullStatus(res.StatusCode), res.Error, res.Duration.Milliseconds(), msg.ID})
	return gen.WebhookTest200JSONResponse{Body: success(value)}, nil
}

// deliverSealed opens a sealed secret and delivers msg to target.
func (s *Server) deliverSealed(ctx context.Context, accountID int64, target string, sealed []byte, msg webhook.Message) webhook.Result {
	return deliverWith(ctx, s.secrets, s.hookClient, accountID, target, sealed, msg)
}

// nullStatus is an HTTP status, or nil for none.
func nullStatus(code int) *int {
	if code == 0 {
		return nil
	}
	return &code
}
