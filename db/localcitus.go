package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// A private Citus cluster for tests and benchmarks: a coordinator and workers,
// each a LocalCluster started from the installed PostgreSQL binaries with the
// citus library preloaded, kept under one directory (.data/citus). It exists
// only where the citus extension is installed beside those binaries; the
// project never installs it.

// CitusLibrary returns the path where the citus extension's library must be for
// the installed PostgreSQL server binaries, and whether it is there.
func CitusLibrary() (path string, installed bool, err error) {
	bin, err := findPGBinDir()
	if err != nil {
		return "", false, err
	}
	path = filepath.Join(filepath.Dir(bin), "lib", "citus.so")
	_, err = os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, false, nil
	}
	return path, err == nil, err
}

// LocalCitus is a private Citus cluster: a coordinator and its workers.
type LocalCitus struct {
	Coordinator *LocalCluster
	Workers     []*LocalCluster
}

// URL returns the connection URL of database on the coordinator.
func (c *LocalCitus) URL(database string) string { return c.Coordinator.URL(database) }

// EnsureLocalCitus starts the Citus cluster in dir (creating its nodes when
// needed): a coordinator and the given number of workers. database is created
// on every node with the citus extension, and the workers are registered with
// the coordinator for it. It is idempotent, so concurrent callers share one
// cluster.
func EnsureLocalCitus(ctx context.Context, dir string, workers int, database string, log *slog.Logger) (*LocalCitus, error) {
	if _, installed, err := CitusLibrary(); err != nil || !installed {
		if err == nil {
			err = errors.New("the citus extension is not installed beside the PostgreSQL server binaries")
		}
		return nil, err
	}
	if !validDatabase(database) {
		return nil, fmt.Errorf("database name %q: use lower-case letters, digits and _", database)
	}
	cluster := &LocalCitus{}
	for i := 0; i <= workers; i++ {
		name := "coordinator"
		if i > 0 {
			name = fmt.Sprintf("worker%d", i)
		}
		node, err := startCitusNode(ctx, dir, name, log)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			cluster.Coordinator = node
		} else {
			cluster.Workers = append(cluster.Workers, node)
		}
	}
	unlock, err := cluster.Coordinator.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	for _, node := range append([]*LocalCluster{cluster.Coordinator}, cluster.Workers...) {
		if err := createCitusDatabase(ctx, node, database); err != nil {
			return nil, err
		}
	}
	coord, err := Open(ctx, cluster.URL(database))
	if err != nil {
		return nil, err
	}
	defer coord.Close()
	if _, err := coord.ExecContext(ctx, `SELECT citus_set_coordinator_host('127.0.0.1', $1)`, cluster.Coordinator.Port); err != nil {
		return nil, fmt.Errorf("register the citus coordinator: %w", err)
	}
	for _, w := range cluster.Workers {
		// citus_add_node returns the existing node's id when it is registered already.
		if _, err := coord.ExecContext(ctx, `SELECT citus_add_node('127.0.0.1', $1)`, w.Port); err != nil {
			return nil, fmt.Errorf("register citus worker on port %d: %w", w.Port, err)
		}
	}
	return cluster, nil
}

// citusNodeSettings are the settings of every node of the private cluster.
var citusNodeSettings = []string{
	"shared_preload_libraries=citus", "max_prepared_transactions=200",
	// The nodes talk over loopback only: no TLS between them (and no client
	// certificate looked up in the home directory of the user who started them).
	"citus.node_conninfo=sslmode=disable",
	// Shards move with logical replication while writes go on
	// (citus_move_shard_placement, the rebalancer; TestCitusClusterChanges).
	"wal_level=logical",
	// Each line names its session's application: make test-citus reads the
	// remote commands of the servers' sessions from the logs (CitusAudit).
	"'log_line_prefix=" + citusLogPrefix + "'",
}

// citusLogPrefix is the log_line_prefix of the private cluster's nodes: the
// time, the process and, in braces, the application_name of the session.
const citusLogPrefix = "%m [%p] {%a} "

// startCitusNode starts (creating when needed) the node called name of the
// private cluster in dir.
func startCitusNode(ctx context.Context, dir, name string, log *slog.Logger) (*LocalCluster, error) {
	node, err := newLocalCluster(filepath.Join(dir, name), log)
	if err != nil {
		return nil, err
	}
	node.anyPort = true
	node.settings = citusNodeSettings
	if err := node.prepareDirs(); err != nil {
		return nil, fmt.Errorf("citus node %s: %w", name, err)
	}
	unlock, err := node.lock(ctx)
	if err != nil {
		return nil, err
	}
	err = node.ensureRunning(ctx)
	unlock()
	if err != nil {
		return nil, fmt.Errorf("citus node %s: %w", name, err)
	}
	return node, nil
}

// EnsureLocalCitusSpare starts a spare node beside the private cluster in dir
// (EnsureLocalCitus first): a PostgreSQL with citus and database in it, not
// registered with the coordinator, for a test that adds a worker
// (citus_add_node) and takes it away again.
func EnsureLocalCitusSpare(ctx context.Context, dir, database string, log *slog.Logger) (*LocalCluster, error) {
	if !validDatabase(database) {
		return nil, fmt.Errorf("database name %q: use lower-case letters, digits and _", database)
	}
	node, err := startCitusNode(ctx, dir, "spare", log)
	if err != nil {
		return nil, err
	}
	if err := createCitusDatabase(ctx, node, database); err != nil {
		return nil, err
	}
	return node, nil
}

// createCitusDatabase creates database on one node, when missing, with the
// citus extension in it (Citus does not propagate CREATE DATABASE).
func createCitusDatabase(ctx context.Context, node *LocalCluster, database string) error {
	admin, err := Open(ctx, node.URL("postgres"))
	if err != nil {
		return err
	}
	defer admin.Close()
	var exists bool
	if err := admin.GetContext(ctx, &exists, `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, database); err != nil {
		return err
	}
	if !exists {
		// The name is checked by validDatabase; CREATE DATABASE takes no parameters.
		if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+database); err != nil {
			return fmt.Errorf("create database %s on port %d: %w", database, node.Port, err)
		}
	}
	pool, err := Open(ctx, node.URL(database))
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS citus`); err != nil {
		return fmt.Errorf("create the citus extension in %s on port %d: %w", database, node.Port, err)
	}
	return nil
}

// StopLocalCitus stops every node of the Citus cluster in dir that runs.
func StopLocalCitus(ctx context.Context, dir string) error {
	nodes, _ := filepath.Glob(filepath.Join(dir, "*", "data", "PG_VERSION"))
	var errs []error
	for _, f := range nodes {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		errs = append(errs, StopLocal(ctx, filepath.Dir(filepath.Dir(f))))
		cancel()
	}
	return errors.Join(errs...)
}

func validDatabase(name string) bool {
	if name == "" || len(name) > 63 {
		return false
	}
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// DropLocalCitusDatabase drops database on every node of the Citus cluster in
// dir that runs, so that the next EnsureLocalCitus creates it empty.
func DropLocalCitusDatabase(ctx context.Context, dir, database string) error {
	if !validDatabase(database) {
		return fmt.Errorf("database name %q: use lower-case letters, digits and _", database)
	}
	nodes, _ := filepath.Glob(filepath.Join(dir, "*", "data", "PG_VERSION"))
	for _, f := range nodes {
		node, err := newLocalCluster(filepath.Dir(filepath.Dir(f)), nil)
		if err != nil {
			return err
		}
		pm, alive := node.postmaster()
		if !alive {
			continue
		}
		node.Port = pm.port
		admin, err := Open(ctx, node.URL("postgres"))
		if err != nil {
			return err
		}
		// The name is checked by validDatabase; DROP DATABASE takes no parameters.
		_, err = admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+database+` WITH (FORCE)`)
		admin.Close()
		if err != nil {
			return fmt.Errorf("drop database %s on port %d: %w", database, node.Port, err)
		}
	}
	return nil
}
