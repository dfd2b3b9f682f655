package impl_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crmservice/crm/impl"
)

// TestGoErrorReplies sends what Go's HTTP server refuses before any handler
// runs, over a raw connection to a server on EnvelopeListener (as crm-server
// serve listens): every reply is an envelope.
func TestGoErrorReplies(t *testing.T) {
	e := newEnv(t)
	w := e.newWorld(t, "acme")
	srv := httptest.NewUnstartedServer(e.handler)
	srv.Config.MaxHeaderBytes = 64 << 10
	srv.Listener = impl.EnvelopeListener(srv.Listener)
	srv.Start()
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")

	for _, tc := range []struct {
		name, request string
		status        int
		code, msg     string
	}{
		{"NUL in Authorization", "GET /company/get?id=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + w.admin.token + "\x00x\r\n\r\n",
			401, "401", "malformed Authorization header"},
		{"a query of 100 KB", "GET /company/get?id=1&x=" + strings.Repeat("a", 100<<10) + " HTTP/1.1\r\nHost: x\r\n\r\n",
			431, "400", "request headers are too large"},
		{"NUL in another header", "GET /company/get?id=1 HTTP/1.1\r\nHost: x\r\nX-Note: a\x00b\r\nAuthorization: Bearer " + w.admin.token + "\r\n\r\n",
			400, "400", "malformed request: the request line or a header could not be parsed"},
		{"a request line that does not parse", "GET /company/get?id=1 HTTP/1.1 extra\r\nHost: x\r\n\r\n",
			400, "400", "malformed request: the request line or a header could not be parsed"},
		{"an unknown transfer coding", "POST /company/insert HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: rot13\r\n\r\n",
			501, "400", "unsupported transfer encoding"},
		{"a header of 100 KB after the client's request id", "GET /company/get?id=1 HTTP/1.1\r\nHost: x\r\nX-Request-Id: mine-431\r\nX-Big: " +
			strings.Repeat("b", 100<<10) + "\r\n\r\n", 431, "400", "request headers are too large"},
		{"a malformed request id is replaced", "GET /company/get?id=1 HTTP/1.1 extra\r\nHost: x\r\nX-Request-Id: a b\r\n\r\n",
			400, "400", "malformed request: the request line or a header could not be parsed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			go func() { _, _ = io.WriteString(conn, tc.request) }()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var env struct {
				Status string  `json:"status"`
				Error  string  `json:"error"`
				Code   *string `json:"code"`
				Rows   *int    `json:"rows"`
				Value  *string `json:"value"`
			}
			if err := json.Unmarshal(body, &env); err != nil {
				t.Fatalf("%d %s: not an envelope: %v", resp.StatusCode, body, err)
			}
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" || env.Status != "error" ||
				env.Code == nil || *env.Code != tc.code || env.Error != tc.msg || env.Rows == nil || env.Value == nil || *env.Value != "" {
				t.Errorf("%d %v %s, want HTTP %d code %s %q", resp.StatusCode, resp.Header, body, tc.status, tc.code, tc.msg)
			}
			if got := resp.Header.Get("WWW-Authenticate"); (tc.status == 401) != strings.HasPrefix(got, "Bearer ") {
				t.Errorf("WWW-Authenticate %q", got)
			}
			// Every reply carries a request id: the client's own when it is well-formed.
			id := resp.Header.Get("X-Request-Id")
			if want := "mine-431"; strings.Contains(tc.request, want) {
				if id != want {
					t.Errorf("X-Request-Id %q, want the client's %q", id, want)
				}
			} else if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
				t.Errorf("X-Request-Id %q, want one the server made", id)
			}
		})
	}

	t.Run("an ordinary request on the same listener", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/directory/9", nil)
		req.Header.Set("Authorization", "Bearer "+w.admin.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("status %d", resp.StatusCode)
		}
	})
}
