package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestETA(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	e := startETA(log, 20*time.Millisecond, 3, 20*time.Second)
	e.begin(0, "first")
	time.Sleep(70 * time.Millisecond)
	e.begin(1, "second")
	e.stop()
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	// Before any scenario ends, each is planned to take 20 s.
	if lines[0] != "level=INFO msg=scenario name=first n=1 of=3 left=1m0s" {
		t.Errorf("first line %q", lines[0])
	}
	if !strings.Contains(logs.String(), "msg=measuring name=first n=1 of=3 left=") {
		t.Errorf("no report while the first scenario runs:\n%s", logs.String())
	}
	// Then each takes what the first took (about 70 ms): two of them are left.
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "level=INFO msg=scenario name=second n=2 of=3 left=0s") {
		t.Errorf("last line %q", last)
	}
}
