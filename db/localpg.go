package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// localPGDefaultPort is tried first so that a developer's cluster has a stable,
// guessable port that does not collide with a system server on 5432.
const localPGDefaultPort = 55432

// LocalCluster is a private PostgreSQL cluster kept in Dir (data in Dir/data,
// sockets in Dir/run, server log in Dir/postgresql.log) listening on
// 127.0.0.1:Port.
type LocalCluster struct {
	Dir  string
	Port int

	binDir string
	cred   *syscall.Credential // nil unless we are root and must act as "postgres"
	log    *slog.Logger
	// settings are extra -c settings of the server (Citus nodes preload citus).
	settings []string
	// anyPort skips the stable default port, for a cluster's second and later nodes.
	anyPort bool
}

// EnsureLocal returns the cluster in dir, creating it with initdb and starting
// it as needed. It is idempotent and serialised across processes by an flock
// on dir/.lock, so concurrent callers share one server.
func EnsureLocal(ctx context.Context, dir string, log *slog.Logger) (*LocalCluster, error) {
	c, err := newLocalCluster(dir, log)
	if err != nil {
		return nil, err
	}
	if err := c.prepareDirs(); err != nil {
		return nil, fmt.Errorf("local postgres in %s: %w", c.Dir, err)
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := c.ensureRunning(ctx); err != nil {
		return nil, fmt.Errorf("local postgres in %s: %w", c.Dir, err)
	}
	return c, nil
}

// StopLocal stops the cluster in dir if one is running; it returns nil if
// there is none.
func StopLocal(ctx context.Context, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("local postgres dir %q: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(abs, "data", "postmaster.pid")); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	c, err := newLocalCluster(abs, nil)
	if err != nil {
		return err
	}
	return c.Stop(ctx)
}

// URL returns a lib/pq-style connection URL for database on this cluster.
func (c *LocalCluster) URL(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, url.PathEscape(database))
}

// Stop shuts the cluster down with pg_ctl stop -m fast; it does nothing if the
// cluster is not running.
func (c *LocalCluster) Stop(ctx context.Context) error {
	unlock, err := c.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, alive := c.postmaster(); !alive {
		return nil
	}
	if err := c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-m", "fast", "-w", "stop"); err != nil {
		return fmt.Errorf("stop local postgres in %s: %w", c.Dir, err)
	}
	c.log.Info("local postgres stopped", "dir", c.Dir)
	return nil
}

func newLocalCluster(dir string, log *slog.Logger) (*LocalCluster, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("local postgres dir %q: %w", dir, err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bin, err := findPGBinDir()
	if err != nil {
		return nil, err
	}
	c := &LocalCluster{Dir: abs, binDir: bin, log: log}
	if os.Geteuid() == 0 {
		if c.cred, err = postgresCredential(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// findPGBinDir returns a directory holding initdb, pg_ctl and postgres. The
// binaries must come from one directory so that their versions match.
func findPGBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if resolved, err := filepath.EvalSymlinks(p); err == nil && hasPGServerBins(filepath.Dir(resolved)) {
			return filepath.Dir(resolved), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Newest first, numerically: Debian names these "9.6", "15", "16".
	version := func(d string) float64 { v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64); return v }
	slices.SortFunc(dirs, func(a, b string) int { return cmp.Compare(version(b), version(a)) })
	for _, d := range append(dirs, "/usr/local/pgsql/bin") {
		if hasPGServerBins(d) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH, " +
		"in /usr/lib/postgresql/*/bin or in /usr/local/pgsql/bin: install them " +
		"(Debian/Ubuntu: apt-get install postgresql) or set DATABASE_URL to an existing server")
}

func hasPGServerBins(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// postgresCredential is needed because initdb and postgres refuse to run as root.
func postgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and initdb/postgres refuse to run as root, but OS user "+
			"\"postgres\" was not found (%w); create it (Debian: adduser --system --group --home "+
			"/var/lib/postgresql postgres; elsewhere: useradd --system --user-group postgres) or run as a non-root user", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	// Groups stays empty: the children drop root's supplementary groups.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (c *LocalCluster) dataDir() string  { return filepath.Join(c.Dir, "data") }
func (c *LocalCluster) runDir() string   { return filepath.Join(c.Dir, "run") }
func (c *LocalCluster) logFile() string  { return filepath.Join(c.Dir, "postgresql.log") }
func (c *LocalCluster) portFile() string { return filepath.Join(c.Dir, "port") }

func (c *LocalCluster) prepareDirs() error {
	for _, d := range []string{c.Dir, c.runDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create local postgres dir: %w", err)
		}
	}
	if c.cred == nil {
		return nil
	}
	for _, d := range []string{c.Dir, c.runDir(), c.dataDir()} {
		err := os.Chown(d, int(c.cred.Uid), int(c.cred.Gid))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("chown %s to user postgres: %w", d, err)
		}
	}
	return c.checkTraversable()
}

// checkTraversable turns an obscure "permission denied" from initdb into an
// error naming the parent directory that user postgres cannot enter.
func (c *LocalCluster) checkTraversable() error {
	resolved, err := filepath.EvalSymlinks(c.Dir)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", c.Dir, err)
	}
	for p := filepath.Dir(resolved); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("check access to %s: %w", p, err)
		}
		if !c.canSearch(fi) {
			return fmt.Errorf("directory %s (mode %#o) is not traversable by OS user postgres, which runs "+
				"the local server; run `chmod o+x %s` or use a local postgres dir elsewhere", p, fi.Mode().Perm(), p)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

func (c *LocalCluster) canSearch(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == c.cred.Uid:
		return perm&0o100 != 0
	case st.Gid == c.cred.Gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// lock polls a non-blocking flock so that a cancelled ctx is honoured.
func (c *LocalCluster) lock(ctx context.Context) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(c.Dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open local postgres lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			f.Close()
			return nil, fmt.Errorf("wait for lock %s: %w", f.Name(), err)
		}
	}
}

func (c *LocalCluster) ensureRunning(ctx context.Context) error {
	if _, alive := c.postmaster(); alive {
		err := c.waitReady(ctx)
		if err == nil {
			c.log.Info("reusing running local postgres", "dir", c.Dir, "port", c.Port)
			return c.savePort()
		}
		if _, alive := c.postmaster(); alive {
			return err
		}
		// It died while we waited (a crash): start it afresh below.
	}
	if err := c.choosePort(); err != nil {
		return err
	}
	if err := c.removeStaleLocks(); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(c.dataDir(), "PG_VERSION")); errors.Is(err, fs.ErrNotExist) {
		if err := c.initdb(ctx); err != nil {
			return err
		}
	}
	return c.start(ctx)
}

type pgPidFile struct {
	pid, port int
	status    string
}

// postmaster reads data/postmaster.pid and reports whether its process is a
// live server of this data dir; the cwd check guards against pid reuse after
// a crash or container restart.
func (c *LocalCluster) postmaster() (pgPidFile, bool) {
	b, err := os.ReadFile(filepath.Join(c.dataDir(), "postmaster.pid"))
	if err != nil {
		return pgPidFile{}, false
	}
	// Pad so that a file still being written by a starting server parses.
	lines := append(strings.Split(string(b), "\n"), make([]string, 8)...)
	var pf pgPidFile
	pf.pid, _ = strconv.Atoi(strings.TrimSpace(lines[0]))
	pf.port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
	pf.status = strings.TrimSpace(lines[7])
	pf.pid = max(pf.pid, -pf.pid) // negative in single-user mode
	if pf.pid <= 0 || syscall.Kill(pf.pid, 0) != nil {
		return pf, false
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pf.pid))
	if err != nil {
		// Fails for zombies, which kill(pid, 0) still finds; without /proc
		// (macOS) trust kill.
		_, noProc := os.Stat("/proc/self")
		return pf, noProc != nil
	}
	resolved, err := filepath.EvalSymlinks(c.dataDir())
	return pf, err != nil || cwd == resolved
}

// waitReady waits until the server says "ready" in postmaster.pid (which rules
// out crash recovery in progress) and accepts TCP connections.
func (c *LocalCluster) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		pm, alive := c.postmaster()
		if !alive {
			return fmt.Errorf("server exited; log tail:\n%s", c.logTail())
		}
		if pm.status == "ready" {
			conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(pm.port)), time.Second)
			if err == nil {
				conn.Close()
				c.Port = pm.port
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server (pid %d) not ready on port %d after 60s; log tail:\n%s", pm.pid, pm.port, c.logTail())
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func (c *LocalCluster) choosePort() error {
	b, err := os.ReadFile(c.portFile())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if c.Port, err = pickFreePort(c.anyPort); err != nil {
			return err
		}
		return c.savePort()
	case err != nil:
		return fmt.Errorf("read port file: %w", err)
	}
	if c.Port, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		return fmt.Errorf("bad port in %s (delete the file to choose a new one): %w", c.portFile(), err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)))
	if err != nil {
		return fmt.Errorf("port %d from %s is taken by another process, not by this cluster; "+
			"stop that process or delete %s to choose a new port: %w", c.Port, c.portFile(), c.portFile(), err)
	}
	return l.Close()
}

func pickFreePort(anyPort bool) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(localPGDefaultPort)))
	if err == nil && anyPort {
		l.Close()
		err = errors.New("any port")
	}
	if err != nil {
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *LocalCluster) savePort() error {
	if err := os.WriteFile(c.portFile(), []byte(strconv.Itoa(c.Port)+"\n"), 0o644); err != nil {
		return fmt.Errorf("save port: %w", err)
	}
	return nil
}

// removeStaleLocks runs once postmaster() said no server runs. PostgreSQL
// refuses to start if the pid in a stale lock file now belongs to another
// live process (or a zombie), so the files go; but deleting postmaster.pid
// defeats PostgreSQL's check for orphaned backends, so we do that check
// instead: every backend's cwd is the data dir. Without /proc the files are
// left to PostgreSQL.
func (c *LocalCluster) removeStaleLocks() error {
	if cwds, _ := filepath.Glob("/proc/[0-9]*/cwd"); len(cwds) == 0 {
		return nil
	}
	data, err := filepath.EvalSymlinks(c.dataDir())
	if err != nil {
		return nil // no data dir yet, so nothing stale
	}
	// A backend may outlive its postmaster by a moment (a stop that has just
	// returned, on a busy machine): give it a few seconds to exit.
	for wait := 0; ; wait++ {
		pid, found := orphanIn(data)
		if !found {
			break
		}
		if wait == 50 {
			return fmt.Errorf("orphaned server process %s still runs in %s; wait for it to exit or kill it", pid, data)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stale, _ := filepath.Glob(filepath.Join(c.runDir(), ".s.PGSQL.*.lock"))
	for _, f := range append(stale, filepath.Join(data, "postmaster.pid")) {
		if err := os.Remove(f); err == nil {
			c.log.Info("removed stale lock file", "file", f)
		}
	}
	return nil
}

// orphanIn finds a postgres process whose working directory is data (every
// backend's is); without /proc it finds none.
func orphanIn(data string) (string, bool) {
	cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, link := range cwds {
		proc := filepath.Dir(link)
		comm, _ := os.ReadFile(filepath.Join(proc, "comm"))
		if cwd, err := os.Readlink(link); err == nil && cwd == data && strings.TrimSpace(string(comm)) == "postgres" {
			return filepath.Base(proc), true
		}
	}
	return "", false
}

func (c *LocalCluster) initdb(ctx context.Context) error {
	c.log.Info("creating local postgres cluster with initdb (seconds; once)", "dir", c.dataDir())
	if err := c.run(ctx, "initdb", "-D", c.dataDir(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"); err != nil {
		return err
	}
	c.log.Info("initdb created local postgres cluster", "dir", c.dataDir())
	return nil
}

func (c *LocalCluster) start(ctx context.Context) error {
	sock := filepath.Join(c.runDir(), fmt.Sprintf(".s.PGSQL.%d", c.Port))
	if len(sock) > 107 {
		return fmt.Errorf("socket path %s exceeds 107 bytes; use a shorter local postgres dir", sock)
	}
	// -o goes through /bin/sh inside pg_ctl, hence the quoting.
	opts := fmt.Sprintf("-p %d -k '%s' -c listen_addresses=127.0.0.1 -c max_connections=200 "+
		"-c shared_buffers=256MB -c max_parallel_workers_per_gather=0 -c jit=off",
		c.Port, strings.ReplaceAll(c.runDir(), "'", `'\''`))
	for _, s := range c.settings {
		opts += " -c " + s
	}
	if err := c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-l", c.logFile(), "-w", "-t", "60", "start", "-o", opts); err != nil {
		return fmt.Errorf("%w\nserver log tail (%s):\n%s", err, c.logFile(), c.logTail())
	}
	if err := c.waitReady(ctx); err != nil {
		return err
	}
	c.log.Info("local postgres started", "dir", c.Dir, "port", c.Port)
	return nil
}

// run executes a PostgreSQL binary from binDir, as user postgres when root.
func (c *LocalCluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...)
	cmd.Dir = c.Dir
	cmd.WaitDelay = 5 * time.Second
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w; output tail:\n%s", name, strings.Join(args, " "), err, tailLines(out, 20))
	}
	return nil
}

func (c *LocalCluster) logTail() string {
	b, err := os.ReadFile(c.logFile())
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return tailLines(b, 20)
}

func tailLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
