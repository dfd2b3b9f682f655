package db

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// localPGTestBase returns a temp dir the postgres user can reach, or skips.
func localPGTestBase(t *testing.T) string {
	t.Helper()
	if _, err := findPGBinDir(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	base := t.TempDir()
	// t.TempDir's parent is created with mode 0700; as root the server runs as
	// user postgres, which must be able to traverse it.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

func localPGStopOnCleanup(t *testing.T, dir string) {
	t.Cleanup(func() {
		if err := StopLocal(context.Background(), dir); err != nil {
			t.Errorf("StopLocal: %v", err)
		}
	})
}

// localPGQuery runs sql through psql, since go.mod has no SQL driver.
func localPGQuery(t *testing.T, c *LocalCluster, sql string) string {
	t.Helper()
	psql := filepath.Join(c.binDir, "psql")
	if _, err := os.Stat(psql); err != nil {
		t.Skipf("skipping: no psql next to the server binaries: %v", err)
	}
	cmd := exec.Command(psql, "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-d", c.URL("postgres"), "-c", sql)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=5")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql %q: %v\n%s", sql, err, out)
	}
	return strings.TrimSpace(string(out))
}

// localPGEnsureConcurrently calls EnsureLocal from n goroutines and checks
// that they all got the same port and the same postmaster.
func localPGEnsureConcurrently(t *testing.T, dir string, n int, log *slog.Logger) *LocalCluster {
	t.Helper()
	clusters := make([]*LocalCluster, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { clusters[i], errs[i] = EnsureLocal(t.Context(), dir, log) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("EnsureLocal #%d: %v", i, err)
		}
		if clusters[i].Port != clusters[0].Port {
			t.Fatalf("EnsureLocal #%d: port %d, #0 got %d", i, clusters[i].Port, clusters[0].Port)
		}
	}
	return clusters[0]
}

func localPGPid(t *testing.T, c *LocalCluster) int {
	t.Helper()
	pm, alive := c.postmaster()
	if !alive {
		t.Fatalf("no live postmaster in %s", c.Dir)
	}
	return pm.pid
}

func TestEnsureLocal(t *testing.T) {
	base := localPGTestBase(t)
	t.Chdir(base)
	dir := filepath.Join(base, ".data")
	localPGStopOnCleanup(t, dir)
	log := slog.New(slog.NewTextHandler(t.Output(), nil))

	c, err := EnsureLocal(t.Context(), "./.data", log)
	if err != nil {
		t.Fatalf("EnsureLocal: %v", err)
	}
	if c.Dir != dir {
		t.Errorf("Dir = %q, want absolute %q", c.Dir, dir)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "port")); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(c.Port) {
		t.Errorf("port file = %q, %v; want %d", b, err, c.Port)
	}
	if got := localPGQuery(t, c, "SELECT 1"); got != "1" {
		t.Fatalf("SELECT 1 = %q", got)
	}

	pid := localPGPid(t, c)
	again := localPGEnsureConcurrently(t, dir, 3, log)
	if again.Port != c.Port || localPGPid(t, again) != pid {
		t.Fatalf("second EnsureLocal: port %d pid %d, want port %d pid %d", again.Port, localPGPid(t, again), c.Port, pid)
	}

	localPGQuery(t, c, "CREATE TABLE survives (x int); INSERT INTO survives VALUES (42)")
	if err := c.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, alive := c.postmaster(); alive {
		t.Fatal("postmaster still alive after Stop")
	}

	restarted := localPGEnsureConcurrently(t, dir, 3, log)
	if restarted.Port != c.Port {
		t.Errorf("restart port = %d, want persisted %d", restarted.Port, c.Port)
	}
	if got := localPGQuery(t, restarted, "SELECT x FROM survives"); got != "42" {
		t.Fatalf("after restart SELECT x = %q, want 42", got)
	}
}

func TestEnsureLocalPersistedPortTaken(t *testing.T) {
	dir := filepath.Join(localPGTestBase(t), "pg")
	localPGStopOnCleanup(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	portFile := filepath.Join(dir, "port")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(portFile, []byte(port+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	_, err = EnsureLocal(t.Context(), dir, nil)
	if err == nil || !strings.Contains(err.Error(), port) || !strings.Contains(err.Error(), portFile) {
		t.Fatalf("EnsureLocal error = %v; want one naming port %s and %s", err, port, portFile)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
		t.Error("initdb ran although the port was taken")
	}
}

func TestEnsureLocalUntraversableParent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: the postgres user is only involved when running as root")
	}
	closed := filepath.Join(localPGTestBase(t), "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := EnsureLocal(t.Context(), filepath.Join(closed, "pg"), nil)
	if err == nil || !strings.Contains(err.Error(), closed+" ") {
		t.Fatalf("EnsureLocal error = %v; want one naming %s", err, closed)
	}
}

func TestStopLocalWithoutCluster(t *testing.T) {
	if err := StopLocal(t.Context(), filepath.Join(t.TempDir(), "none")); err != nil {
		t.Fatalf("StopLocal on an empty dir: %v", err)
	}
}
