package apidocs

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

var pageFiles = fstest.MapFS{
	"index.html":                            {Data: []byte("<html>page</html>")},
	"init.js":                               {Data: []byte("Redoc.init('openapi.json')")},
	"fallback.html":                         {Data: []byte("<html>fallback: make build</html>")},
	"redoc/redoc.standalone.js":             {Data: bytes.Repeat([]byte("var redoc = 1;\n"), 1000)},
	"redoc/LICENSE":                         {Data: []byte("MIT")},
	"redoc/redoc.standalone.js.LICENSE.txt": {Data: []byte("licences")},
}

func serve(h http.Handler, method, target string, header map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandler(t *testing.T) {
	h, err := newHandler(pageFiles, []byte("openapi: 3.0.3\n"), []byte(`{"openapi":"3.0.3"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !h.Bundled() {
		t.Fatal("the renderer is there, but not bundled")
	}

	t.Run("OK: the page, its files and the contract", func(t *testing.T) {
		for _, c := range []struct{ path, contentType, body string }{
			{"/docs", "text/html; charset=utf-8", "<html>page</html>"},
			{"/docs/init.js", "text/javascript; charset=utf-8", "Redoc.init('openapi.json')"},
			{"/docs/LICENSE", "text/plain; charset=utf-8", "MIT"},
			{"/docs/redoc.standalone.js.LICENSE.txt", "text/plain; charset=utf-8", "licences"},
			{"/openapi.yaml", "application/yaml; charset=utf-8", "openapi: 3.0.3\n"},
			{"/openapi.json", "application/json", `{"openapi":"3.0.3"}`},
		} {
			w := serve(h, http.MethodGet, c.path, nil)
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != c.contentType || w.Body.String() != c.body ||
				w.Header().Get("ETag") == "" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s: %d %v %q", c.path, w.Code, w.Header(), w.Body)
			}
			if !h.Handles(c.path) {
				t.Errorf("%s: not handled", c.path)
			}
		}
	})

	t.Run("the page may reach only its own server", func(t *testing.T) {
		csp := serve(h, http.MethodGet, "/docs", nil).Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "img-src 'self' data:"} {
			if !strings.Contains(csp, want) {
				t.Errorf("policy %q lacks %q", csp, want)
			}
		}
		if serve(h, http.MethodGet, "/openapi.json", nil).Header().Get("Access-Control-Allow-Origin") != "*" {
			t.Error("the contract is not readable from other origins")
		}
		if serve(h, http.MethodGet, "/docs", nil).Header().Get("Access-Control-Allow-Origin") != "" {
			t.Error("the page is readable from other origins")
		}
	})

	t.Run("OK: revalidation, HEAD and gzip", func(t *testing.T) {
		w := serve(h, http.MethodGet, "/docs/redoc.standalone.js", nil)
		tag := w.Header().Get("ETag")
		if again := serve(h, http.MethodGet, "/docs/redoc.standalone.js", map[string]string{"If-None-Match": tag}); again.Code != http.StatusNotModified || again.Body.Len() != 0 {
			t.Errorf("If-None-Match: %d", again.Code)
		}
		if head := serve(h, http.MethodHead, "/docs/redoc.standalone.js", nil); head.Code != http.StatusOK || head.Body.Len() != 0 || head.Header().Get("Content-Length") != "15000" {
			t.Errorf("HEAD: %d %v", head.Code, head.Header())
		}
		z := serve(h, http.MethodGet, "/docs/redoc.standalone.js", map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
		if z.Header().Get("Content-Encoding") != "gzip" || z.Header().Get("ETag") == tag || z.Body.Len() >= 15000 ||
			z.Header().Get("Vary") != "Accept-Encoding" {
			t.Fatalf("gzip: %v, %d bytes", z.Header(), z.Body.Len())
		}
		zr, err := gzip.NewReader(z.Body)
		if err != nil {
			t.Fatal(err)
		}
		if body, _ := io.ReadAll(zr); !bytes.Equal(body, pageFiles["redoc/redoc.standalone.js"].Data) {
			t.Error("the gzipped file differs")
		}
		if z := serve(h, http.MethodGet, "/docs/redoc.standalone.js", map[string]string{"Accept-Encoding": "gzip;q=0"}); z.Header().Get("Content-Encoding") != "" {
			t.Errorf("gzip;q=0: %v", z.Header())
		}
	})

	t.Run("other paths and methods", func(t *testing.T) {
		if w := serve(h, http.MethodGet, "/docs/", nil); w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/docs" {
			t.Errorf("/docs/: %d %v", w.Code, w.Header())
		}
		if w := serve(h, http.MethodPost, "/docs", nil); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("POST: %d", w.Code)
		}
		if h.Handles("/docs/nothing.js") || h.Handles("/openapi.yml") {
			t.Error("handles files it does not have")
		}
	})
}

func TestFallback(t *testing.T) {
	files := fstest.MapFS{}
	for name, f := range pageFiles {
		if !strings.HasPrefix(name, "redoc/") {
			files[name] = f
		}
	}
	h, err := newHandler(files, []byte("openapi: 3.0.3\n"), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if h.Bundled() {
		t.Error("bundled without the renderer")
	}
	if w := serve(h, http.MethodGet, "/docs", nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "make build") {
		t.Errorf("%d %s", w.Code, w.Body)
	}
	if h.Handles("/docs/init.js") || h.Handles("/docs/redoc.standalone.js") {
		t.Error("serves the script of a page that cannot run")
	}
	if w := serve(h, http.MethodGet, "/openapi.yaml", nil); w.Body.String() != "openapi: 3.0.3\n" {
		t.Errorf("the contract: %s", w.Body)
	}
}

// TestEmbedded checks what this build embeds. make test builds the renderer
// first and sets CRM_REQUIRE_APIDOCS=1, so that a missing renderer fails
// there; a plain go test of a clean checkout checks the fallback page.
func TestEmbedded(t *testing.T) {
	h, err := New([]byte("openapi: 3.0.3\ninfo: {title: t}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := serve(h, http.MethodGet, "/openapi.json", nil).Body.String(); got != `{"openapi":"3.0.3","info":{"title":"t"}}` {
		t.Errorf("/openapi.json: %s", got)
	}
	page := serve(h, http.MethodGet, "/docs", nil).Body.String()
	switch {
	case h.Bundled():
		script := serve(h, http.MethodGet, "/docs/redoc.standalone.js", nil)
		licence := serve(h, http.MethodGet, "/docs/LICENSE", nil)
		if !strings.Contains(page, `src="docs/redoc.standalone.js"`) || !strings.Contains(page, `href="docs/LICENSE"`) ||
			script.Body.Len() < 100_000 || !strings.Contains(licence.Body.String(), "MIT License") {
			t.Errorf("page %q, script %d bytes, licence %q", page, script.Body.Len(), licence.Body)
		}
	case os.Getenv("CRM_REQUIRE_APIDOCS") != "":
		t.Fatal("the renderer of /docs is not embedded (run make apidocs)")
	default:
		if !strings.Contains(page, "make build") {
			t.Errorf("fallback page %q", page)
		}
		t.Log("the renderer is not embedded (make apidocs was not run): checked the fallback page")
	}
}
