package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// commandWords returns the words of the shell command that starts with prog in
// text (lines joined at a trailing backslash), without prog itself.
func commandWords(t *testing.T, text, prog string) []string {
	t.Helper()
	text = strings.ReplaceAll(text, "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, prog+" "); ok {
			return strings.Fields(rest)
		}
	}
	t.Fatalf("no command %s in:\n%s", prog, text)
	return nil
}

// flagsOf lists the flags of a command's words with the values of those whose
// value is not a variable or URL (report files), such as "-junit report.xml".
func flagsOf(words []string) []string {
	var out []string
	for i, w := range words {
		if !strings.HasPrefix(w, "-") {
			continue
		}
		if i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") && !strings.ContainsAny(words[i+1], "$:") {
			w += " " + words[i+1]
		}
		out = append(out, w)
	}
	return out
}

// TestREADMECommand: .ci/conformance.sh (make conformance, .ci/run) runs the
// command with exactly the flags README.md shows users.
func TestREADMECommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(readme), "\n## Checking a deployment against the contract\n")
	if !found {
		t.Fatal("README.md has no section \"Checking a deployment against the contract\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	block := regexp.MustCompile("(?s)\n```sh\n(.*?)\n```\n").FindStringSubmatch(section)
	if block == nil {
		t.Fatal("the section has no sh block")
	}
	if !strings.Contains(block[1], "go install github.com/crmservice/crm/cmd/crm-conformance@") {
		t.Errorf("the section does not show go install of the module's command:\n%s", block[1])
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(mod), "module github.com/crmservice/crm\n") {
		t.Errorf("go.mod names another module than the README installs from")
	}
	want := flagsOf(commandWords(t, block[1], "crm-conformance"))

	script, err := os.ReadFile("../../.ci/conformance.sh")
	if err != nil {
		t.Fatal(err)
	}
	got := flagsOf(commandWords(t, string(script), "bin/crm-conformance"))
	// The script's base URLs come in "${urls[@]}", each as -base-url URL.
	if strings.Contains(string(script), `urls+=(-base-url `) {
		got = append([]string{"-base-url"}, got...)
	}
	if !slices.Equal(got, want) {
		t.Errorf(".ci/conformance.sh runs crm-conformance with %q; README.md shows %q", got, want)
	}
}
