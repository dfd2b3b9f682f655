package crm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/crmservice/crm/sdk/go/crm/api"
)

// Client calls the API with one bearer token. It is safe for concurrent use.
type Client struct {
	raw   *api.Client
	token string
}

// Option configures a Client made by New.
type Option func(*options)

type options struct {
	httpClient *http.Client
	editors    []api.RequestEditorFn
}

// WithHTTPClient makes the Client send its requests through hc (timeouts,
// transports, proxies); http.DefaultClient otherwise.
func WithHTTPClient(hc *http.Client) Option {
	return func(o *options) { o.httpClient = hc }
}

// WithRequestEditor runs fn on every request before it is sent.
func WithRequestEditor(fn api.RequestEditorFn) Option {
	return func(o *options) { o.editors = append(o.editors, fn) }
}

// New returns a Client of the API at baseURL (such as "http://localhost:8080")
// that authenticates with token.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	o := options{httpClient: http.DefaultClient}
	for _, opt := range opts {
		opt(&o)
	}
	c := &Client{token: token}
	copts := []api.ClientOption{api.WithHTTPClient(o.httpClient), api.WithRequestEditorFn(c.authorize)}
	for _, ed := range o.editors {
		copts = append(copts, api.WithRequestEditorFn(ed))
	}
	raw, err := api.NewClient(strings.TrimSuffix(baseURL, "/"), copts...)
	if err != nil {
		return nil, fmt.Errorf("crm: %w", err)
	}
	c.raw = raw
	return c, nil
}

// Raw returns the oapi-codegen client the typed methods use, which returns
// the plain *http.Response.
func (c *Client) Raw() *api.Client { return c.raw }

func (c *Client) authorize(_ context.Context, req *http.Request) error {
	req.Header.Set("Authorization", "Bearer "+c.token)
	return nil
}

// WithHeader sets a header on one call, such as Idempotency-Key or X-Request-Id:
//
//	id, err := c.CompanyInsert(ctx, nil, body, crm.WithHeader("Idempotency-Key", key))
func WithHeader(name, value string) api.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set(name, value)
		return nil
	}
}

// Meta holds the counts of a list reply: Rows records match the filter in
// total, in Pages pages, of which Page was served.
type Meta struct {
	Rows, Pages, Page int
}

// maxReply bounds the reply the SDK reads (the server's own body limit is far below).
const maxReply = 256 << 20

// decode reads one reply: the envelope, then its value into out (nil: the
// value is not decoded). Every failure the envelope or the HTTP status reports
// is a *Error.
func decode(resp *http.Response, err error, out any) (Meta, error) {
	if err != nil {
		return Meta{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return Meta{}, fmt.Errorf("crm: read the reply: %w", err)
	}
	var env api.Envelope
	if jerr := json.Unmarshal(data, &env); jerr != nil || env.Status == "" {
		return Meta{}, unexpected(resp, data)
	}
	meta := Meta{Rows: env.Rows, Pages: env.Pages, Page: env.Page}
	if env.Status != api.StatusSuccess || resp.StatusCode != http.StatusOK {
		return meta, envelopeError(resp, &env)
	}
	if out == nil || env.Value == "" {
		return meta, nil
	}
	dec := json.NewDecoder(strings.NewReader(env.Value))
	dec.UseNumber() // free-form members (list rows) keep every digit too
	if err := dec.Decode(out); err != nil {
		return meta, &Error{HTTPStatus: resp.StatusCode, Code: "", Message: fmt.Sprintf("decode value as %T: %v", out, err), RequestID: resp.Header.Get("X-Request-Id")}
	}
	return meta, nil
}
