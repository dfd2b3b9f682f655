// Package docs holds the project's documentation; its test keeps every link in
// README.md and docs/*.md pointing at something that exists.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// A file of the repository named in code font, such as `impl/server.go`.
	namedFile = regexp.MustCompile("`((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-]+\\.(?:md|go|sql|yaml|yml|json|sh))`")
)

// TestLinks checks that every relative link of the README and of docs/*.md, and
// every repository file they name in code font, exists.
func TestLinks(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../README.md")
	for _, page := range pages {
		body, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(page)
		for _, m := range markdownLink.FindAllStringSubmatch(string(body), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			if _, err := os.Stat(filepath.Join(dir, target)); err != nil {
				t.Errorf("%s: link to %s: %v", page, m[1], err)
			}
		}
		for _, m := range namedFile.FindAllStringSubmatch(string(body), -1) {
			name := m[1]
			if strings.ContainsAny(name, "{}*") || !strings.Contains(name, "/") && !exists(filepath.Join("..", name)) && !exists(name) {
				// A bare file name (`server.go`) may be one of a package named nearby;
				// it must still exist somewhere in the repository.
				if !existsAnywhere(name) {
					t.Errorf("%s: names %s, which is nowhere in the repository", page, name)
				}
				continue
			}
			if !exists(filepath.Join("..", name)) && !exists(filepath.Join(dir, name)) {
				t.Errorf("%s: names %s, which does not exist", page, name)
			}
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// existsAnywhere reports whether a file of that base name is in the repository
// (outside .git, .data and node_modules).
func existsAnywhere(name string) bool {
	found := false
	_ = filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || found {
			return filepath.SkipDir
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".data" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == filepath.Base(name) {
			found = true
		}
		return nil
	})
	return found
}
