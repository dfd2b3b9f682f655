package main

import (
	"fmt"
	"os"
	"time"

	"github.com/crmservice/crm/impl"
)

// deadlinesFromEnv reads the deadlines of the operation classes from
// DEADLINE_READ, DEADLINE_LIST, DEADLINE_WRITE and DEADLINE_MAIL (Go durations
// from 100ms to 10m); those unset keep impl.DefaultDeadlines.
func deadlinesFromEnv() (impl.Deadlines, error) {
	d := impl.DefaultDeadlines
	for _, v := range []struct {
		name string
		to   *time.Duration
	}{
		{"DEADLINE_READ", &d.Read}, {"DEADLINE_LIST", &d.List}, {"DEADLINE_WRITE", &d.Write}, {"DEADLINE_MAIL", &d.Mail},
	} {
		s := os.Getenv(v.name)
		if s == "" {
			continue
		}
		dur, err := time.ParseDuration(s)
		if err != nil || dur < 100*time.Millisecond || dur > 10*time.Minute {
			return d, fmt.Errorf("%s %q is not a duration from 100ms to 10m (such as 5s)", v.name, s)
		}
		*v.to = dur
	}
	return d, nil
}
