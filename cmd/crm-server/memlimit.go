package main

import (
	"bufio"
	"bytes"
	"log/slog"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// The Go runtime's soft memory limit (GOMEMLIMIT) of crm-server serve: when
// the operator sets none and the process runs in a cgroup with a memory limit
// (a container, a systemd unit with MemoryMax=), serve sets it to
// containerMemoryShare of that limit, so that the collector works harder as
// the process nears it instead of the kernel killing the process. Without a
// cgroup limit there is none, as Go's default: docs/decisions.md ("Memory of a
// request") has the measurements.

// containerMemoryShare is the part of the cgroup's memory limit given to the
// Go heap; the rest is for the runtime's own memory and the kernel's.
const containerMemoryShare = 0.9

// noCgroupLimit is the value from which cgroup v1 means "no limit" (it
// reports a number near the largest int64, rounded to pages).
const noCgroupLimit = 1 << 60

// cgroupMemoryLimit is the memory limit of the process's cgroup in bytes, or 0
// when there is none or it cannot be read: cgroup v2's memory.max or v1's
// memory.limit_in_bytes, of the process's own cgroup (from /proc/self/cgroup)
// or, where that is not mounted (a cgroup namespace), of the root of the mount.
func cgroupMemoryLimit(read func(string) ([]byte, error)) int64 {
	var v1, v2 string
	if raw, err := read("/proc/self/cgroup"); err == nil {
		lines := bufio.NewScanner(bytes.NewReader(raw))
		for lines.Scan() {
			parts := strings.SplitN(lines.Text(), ":", 3)
			if len(parts) != 3 {
				continue
			}
			switch {
			case parts[0] == "0" && parts[1] == "":
				v2 = parts[2]
			case strings.Contains(","+parts[1]+",", ",memory,"):
				v1 = parts[2]
			}
		}
	}
	var candidates []string
	if v1 != "" {
		candidates = append(candidates, path.Join("/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes"), "/sys/fs/cgroup/memory/memory.limit_in_bytes")
	}
	if v2 != "" {
		candidates = append(candidates, path.Join("/sys/fs/cgroup", v2, "memory.max"), "/sys/fs/cgroup/memory.max")
	}
	for _, file := range candidates {
		raw, err := read(file)
		if err != nil {
			continue
		}
		text := strings.TrimSpace(string(raw))
		if text == "max" {
			return 0
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n <= 0 || n >= noCgroupLimit {
			return 0
		}
		return n
	}
	return 0
}

// applyMemoryLimit sets the soft memory limit from the cgroup's when
// GOMEMLIMIT is not set (the runtime reads that itself), and logs the limit
// in force.
func applyMemoryLimit(log *slog.Logger, getenv func(string) string, read func(string) ([]byte, error)) {
	if v := getenv("GOMEMLIMIT"); v != "" {
		log.Info("memory limit", "GOMEMLIMIT", v)
		return
	}
	limit := cgroupMemoryLimit(read)
	if limit == 0 {
		return
	}
	soft := int64(float64(limit) * containerMemoryShare)
	debug.SetMemoryLimit(soft)
	log.Info("memory limit from the cgroup (set GOMEMLIMIT to choose another)", "cgroup_bytes", limit, "GOMEMLIMIT_bytes", soft)
}

// osEnvironment are the process's own environment and files, for applyMemoryLimit.
var (
	osGetenv   = os.Getenv
	osReadFile = os.ReadFile
)
