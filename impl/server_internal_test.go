package impl

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPanicBecomesInternalError(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
	h := s.recoverAndLog(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom: connection string postgres://secret")
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/company/get?id=1", nil))

	var env map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
		t.Fatalf("reply is not JSON: %s", w.Body)
	}
	want := map[string]any{"status": "error", "error": "internal error", "code": "500", "rows": 0.0, "pages": 0.0, "page": 0.0, "value": ""}
	if w.Code != http.StatusOK || len(env) != len(want) {
		t.Fatalf("reply %d %s", w.Code, w.Body)
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %v, want %v", k, env[k], v)
		}
	}
	if strings.Contains(w.Body.String(), "secret") {
		t.Error("the panic's text reached the client")
	}
	if !strings.Contains(logs.String(), "boom") || !strings.Contains(logs.String(), "goroutine") {
		t.Errorf("the panic and its stack are not in the log:\n%s", logs.String())
	}
}
