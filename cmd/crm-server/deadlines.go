package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/crmservice/crm/db"
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

// largeRequestsFromEnv reads LARGE_REQUESTS: how many requests with a body over
// 1 MiB the process handles at once (0 or unset: 4; "off": no bound).
func largeRequestsFromEnv() (int, error) {
	v := os.Getenv("LARGE_REQUESTS")
	switch v {
	case "":
		return 0, nil
	case "off":
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 10000 {
		return 0, fmt.Errorf("LARGE_REQUESTS %q is not a number from 1 to 10000, or off", v)
	}
	return n, nil
}

// maxInFlightFromEnv reads MAX_IN_FLIGHT: how many operations the process
// serves at once, the rest waiting in line (unset or "off": no bound).
func maxInFlightFromEnv() (int, error) {
	v := os.Getenv("MAX_IN_FLIGHT")
	if v == "" || v == "off" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 100000 {
		return 0, fmt.Errorf("MAX_IN_FLIGHT %q is not a number from 1 to 100000, or off", v)
	}
	return n, nil
}

// citusRoutingFromEnv reads CITUS_ROUTING: whether, on Citus, each request's
// statements go to the node that holds its account ("on", the default) or all
// through the coordinator ("off").
func citusRoutingFromEnv() (bool, error) {
	switch v := os.Getenv("CITUS_ROUTING"); v {
	case "", "on":
		return true, nil
	case "off":
		return false, nil
	default:
		return false, fmt.Errorf("CITUS_ROUTING %q is not on or off", v)
	}
}

// citusNodesFromEnv reads CITUS_NODES: the addresses at which this process
// reaches Citus nodes whose address in Citus's metadata it cannot use, as
// "host:port=host:port,..." (unset: the metadata's own).
func citusNodesFromEnv() (map[string]string, error) {
	m, err := db.ParseNodeAddresses(os.Getenv("CITUS_NODES"))
	if err != nil {
		return nil, fmt.Errorf("CITUS_NODES: %w", err)
	}
	return m, nil
}
