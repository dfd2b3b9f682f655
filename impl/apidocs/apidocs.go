// Package apidocs serves the API reference page and the contract it renders:
// GET /docs (the page), GET /docs/{file} (its script, its renderer's
// licences), GET /openapi.yaml and GET /openapi.json. Everything comes from
// the binary, so the page works with no network.
//
// The renderer is Redoc's standalone bundle, taken from its npm package by
// `make apidocs` (run by make build, run and test) into assets/redoc, with
// its licence and the licences of what it bundles; go:embed puts it in the
// binary. Built without that step (a plain `go build` of a clean checkout)
// the server still builds and serves the contract, and /docs says how to get
// the renderer instead of rendering.
package apidocs

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

//go:embed assets
var embedded embed.FS

// Paths of the contract.
const (
	YAMLPath = "/openapi.yaml"
	JSONPath = "/openapi.json"
	PagePath = "/docs"
)

// bundle is the file of the renderer that the page needs; without it the
// page is the fallback.
const bundle = "redoc.standalone.js"

// Handler serves the reference page, its files and the contract.
type Handler struct {
	files   map[string]*file // by URL path
	bundled bool
}

// New returns the handler of the page over the embedded files, serving the
// contract's text as YAML (as written) and as JSON (the same document, its
// keys in the order written: see JSON).
func New(contractYAML []byte) (*Handler, error) {
	sub, err := fs.Sub(embedded, "assets")
	if err != nil {
		return nil, fmt.Errorf("apidocs: %w", err)
	}
	contractJSON, err := JSON(contractYAML)
	if err != nil {
		return nil, err
	}
	return newHandler(sub, contractYAML, contractJSON)
}

// newHandler serves the page from assets: index.html, init.js and
// fallback.html, and the renderer's files under redoc/ when it was built.
func newHandler(assets fs.FS, contractYAML, contractJSON []byte) (*Handler, error) {
	h := &Handler{files: map[string]*file{}}
	add := func(urlPath, contentType, cacheControl string, body []byte) {
		h.files[urlPath] = newFile(contentType, cacheControl, body)
	}
	// The contract: any origin may read it (it is public, and tools such as
	// online editors fetch it from their own origin).
	add(YAMLPath, "application/yaml; charset=utf-8", "no-cache", contractYAML)
	add(JSONPath, "application/json", "no-cache", contractJSON)
	h.files[YAMLPath].anyOrigin, h.files[JSONPath].anyOrigin = true, true

	renderer, err := fs.ReadDir(assets, "redoc")
	if err == nil {
		for _, e := range renderer {
			if e.IsDir() {
				continue
			}
			body, err := fs.ReadFile(assets, path.Join("redoc", e.Name()))
			if err != nil {
				return nil, fmt.Errorf("apidocs: %w", err)
			}
			add(PagePath+"/"+e.Name(), contentTypeOf(e.Name()), "public, max-age=300", body)
			if e.Name() == bundle {
				h.bundled = true
			}
		}
	}
	page := "fallback.html"
	if h.bundled {
		page = "index.html"
		init, err := fs.ReadFile(assets, "init.js")
		if err != nil {
			return nil, fmt.Errorf("apidocs: %w", err)
		}
		add(PagePath+"/init.js", "text/javascript; charset=utf-8", "no-cache", init)
	}
	body, err := fs.ReadFile(assets, page)
	if err != nil {
		return nil, fmt.Errorf("apidocs: %w", err)
	}
	add(PagePath, "text/html; charset=utf-8", "no-cache", body)
	h.files[PagePath].page = true
	return h, nil
}

// Bundled reports whether the renderer is in the binary (else /docs is the
// page that says how to build it).
func (h *Handler) Bundled() bool { return h.bundled }

// Handles reports whether path is one this handler serves (with GET or HEAD).
func (h *Handler) Handles(path string) bool {
	_, ok := h.files[path]
	return ok || path == PagePath+"/"
}

// ServeHTTP serves the page, its files and the contract; other methods than
// GET and HEAD are answered 405 with Allow.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == PagePath+"/" {
		http.Redirect(w, r, PagePath, http.StatusMovedPermanently)
		return
	}
	f := h.files[r.URL.Path]
	if f == nil {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	f.serve(w, r)
}

// file is one file served, with its validator and, once asked for, its
// gzip-compressed form.
type file struct {
	contentType  string
	cacheControl string
	body         []byte
	etag         string
	page         bool // the HTML page: its security policy
	anyOrigin    bool // readable from any origin

	gzipped func() []byte
}

func newFile(contentType, cacheControl string, body []byte) *file {
	sum := sha256.Sum256(body)
	f := &file{contentType: contentType, cacheControl: cacheControl, body: body,
		etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
	f.gzipped = sync.OnceValue(func() []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(body)
		_ = zw.Close()
		if buf.Len() >= len(body) {
			return nil
		}
		return buf.Bytes()
	})
	return f
}

// pagePolicy lets the page run only the server's own scripts and reach only
// the server: the renderer styles itself inline and searches in a worker it
// starts from a blob.
const pagePolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (f *file) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", f.cacheControl)
	h.Set("X-Content-Type-Options", "nosniff")
	if !slices.Contains(h.Values("Vary"), "Accept-Encoding") { // the compression layer may have said so
		h.Add("Vary", "Accept-Encoding")
	}
	if f.page {
		h.Set("Content-Security-Policy", pagePolicy)
		h.Set("Referrer-Policy", "no-referrer")
	}
	if f.anyOrigin {
		h.Set("Access-Control-Allow-Origin", "*")
	}
	body, etag := f.body, f.etag
	if acceptsGzip(r) {
		if gz := f.gzipped(); gz != nil {
			body, etag = gz, strings.TrimSuffix(f.etag, `"`)+`-gzip"`
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("ETag", etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				continue
			}
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

func contentTypeOf(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".txt", "":
		return "text/plain; charset=utf-8"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}
