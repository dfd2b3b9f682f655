package main

import (
	"errors"
	"testing"
)

func TestCgroupMemoryLimit(t *testing.T) {
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if v, ok := m[name]; ok {
				return []byte(v), nil
			}
			return nil, errors.New("no such file")
		}
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"cgroup v2 with a limit", map[string]string{"/proc/self/cgroup": "0::/system.slice/crm.service\n",
			"/sys/fs/cgroup/system.slice/crm.service/memory.max": "536870912\n"}, 512 << 20},
		{"cgroup v2 without one", map[string]string{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/memory.max": "max\n"}, 0},
		{"cgroup v2 in a namespace", map[string]string{"/proc/self/cgroup": "0::/kubepods/pod1/c1\n", "/sys/fs/cgroup/memory.max": "1073741824"}, 1 << 30},
		{"cgroup v1 with a limit", map[string]string{"/proc/self/cgroup": "4:memory:/docker/abc\n1:cpu:/\n",
			"/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "268435456"}, 256 << 20},
		{"cgroup v1 unlimited", map[string]string{"/proc/self/cgroup": "4:memory:/x\n0::/\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712"}, 0},
		{"no cgroup files", map[string]string{}, 0},
	} {
		if got := cgroupMemoryLimit(files(tc.files)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
