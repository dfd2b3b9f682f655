package db

import (
	"context"
	"fmt"
	"log/slog"
	"math/bits"
	"net"
	neturl "net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// On Citus, the statements of a request go to the node that holds the
// caller's account, not through the coordinator (docs/scale-out.md, "Routing
// to the account's node"). There every statement reads shards of that node
// only, so Citus runs it locally: the plans of the functions of db/functions
// stay cached in the session, no statement crosses the network twice, and the
// coordinator does no work for the request at all.
//
// Router keeps the map from the accounts' hash ranges to the nodes, read from
// Citus's metadata on the coordinator and read again every refresh interval,
// so that routing follows a shard moved by the rebalancer within that time.
// A request routed to a node that no longer holds the account is still served
// correctly there (the node forwards its statements, as the coordinator would),
// only a little slower, until the next refresh.

// Node is where statements go: a node's pools and its address.
type Node struct {
	Addr    string   // host:port, as Citus names the node; "" for the coordinator (DATABASE_URL)
	DB      *sqlx.DB // ordinary sessions
	Generic *sqlx.DB // the sessions of OpenGeneric
}

// RouterOptions configure NewRouter.
type RouterOptions struct {
	// Refresh is how often the placements are read again (2 s when 0).
	Refresh time.Duration
	// Open opens a pool for a node's URL (Open with the options of the
	// coordinator's pools when nil); OpenGeneric likewise.
	Open, OpenGeneric func(ctx context.Context, url string) (*sqlx.DB, error)
	Log               *slog.Logger
	// Addresses maps a node's address as Citus names it (host:port in
	// pg_dist_node) to the one this process reaches it at, where the two
	// differ (another network, a proxy); others are used as they are.
	Addresses map[string]string
}

// Router chooses the node of an account.
type Router struct {
	coord *Node
	url   string // the coordinator's URL, whose host and port a node's pools replace
	opts  RouterOptions

	mu     sync.RWMutex
	ranges []hashRange       // sorted by min
	nodes  map[string]*Node  // by address, opened on first use
	failed map[string]string // addresses that could not be opened, and why

	stop chan struct{}
	done chan struct{}
}

// hashRange is a shard of accounts: the hash values it holds and its node.
type hashRange struct {
	min, max int32
	addr     string
}

// NewRouter returns the router of the Citus cluster whose coordinator is
// coord (opened from url), having read the placements once, and keeps them
// current until Close. On a database without Citus there is nothing to route:
// it returns nil, which Close accepts.
func NewRouter(ctx context.Context, url string, coord *Node, opts RouterOptions) (*Router, error) {
	if opts.Refresh <= 0 {
		opts.Refresh = 2 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Open == nil {
		opts.Open = func(ctx context.Context, url string) (*sqlx.DB, error) { return Open(ctx, url) }
	}
	if opts.OpenGeneric == nil {
		opts.OpenGeneric = func(ctx context.Context, url string) (*sqlx.DB, error) { return OpenGeneric(ctx, url) }
	}
	r := &Router{coord: coord, url: url, opts: opts, nodes: map[string]*Node{}, failed: map[string]string{}}
	citus, err := IsCitus(ctx, coord.DB)
	if err != nil {
		return nil, err
	}
	if !citus {
		return nil, nil
	}
	if err := r.refresh(ctx); err != nil {
		return nil, err
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go r.loop()
	return r, nil
}

// Coordinator returns the node of DATABASE_URL.
func (r *Router) Coordinator() *Node { return r.coord }

// For returns the node that holds account, or the coordinator when no node
// is known for it or its node cannot be reached.
func (r *Router) For(ctx context.Context, account int64) *Node {
	r.mu.RLock()
	addr := r.addrOf(account)
	n := r.nodes[addr]
	_, failed := r.failed[addr]
	r.mu.RUnlock()
	if n != nil {
		return n
	}
	if addr == "" || failed {
		return r.coord
	}
	return r.open(ctx, addr)
}

// addrOf returns the address of the node whose shard holds account; r.mu is held.
func (r *Router) addrOf(account int64) string {
	h := HashInt8(account)
	i := sort.Search(len(r.ranges), func(i int) bool { return r.ranges[i].max >= h })
	if i < len(r.ranges) && r.ranges[i].min <= h {
		return r.ranges[i].addr
	}
	return ""
}

// open opens the pools of the node at addr, or records why it could not.
func (r *Router) open(ctx context.Context, addr string) *Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.nodes[addr]; n != nil {
		return n
	}
	if _, failed := r.failed[addr]; failed {
		return r.coord
	}
	n, err := r.openNode(ctx, addr)
	if err != nil {
		r.failed[addr] = err.Error()
		r.opts.Log.Warn("cannot route to a Citus node, its accounts go through the coordinator", "node", addr, "err", err)
		return r.coord
	}
	r.nodes[addr] = n
	return n
}

func (r *Router) openNode(ctx context.Context, addr string) (*Node, error) {
	u, err := neturl.Parse(r.url)
	if err != nil {
		return nil, fmt.Errorf("database URL: %w", err)
	}
	u.Host = addr
	if to, ok := r.opts.Addresses[addr]; ok {
		u.Host = to
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	db, err := r.opts.Open(ctx, u.String())
	if err != nil {
		return nil, err
	}
	generic, err := r.opts.OpenGeneric(ctx, u.String())
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Node{Addr: addr, DB: db, Generic: generic}, nil
}

// refresh reads the placements of the shards of accounts (and so of every
// table co-located with it) from the coordinator. Only nodes that hold
// Citus's metadata can plan a statement themselves; a shard on any other
// stays with the coordinator.
func (r *Router) refresh(ctx context.Context) error {
	var rows []struct {
		Min  string `db:"shardminvalue"`
		Max  string `db:"shardmaxvalue"`
		Host string `db:"nodename"`
		Port int    `db:"nodeport"`
		Meta bool   `db:"metadata"`
	}
	// cross-account: the placement of every shard, from the coordinator's catalog.
	err := r.coord.DB.SelectContext(ctx, &rows, `
		SELECT s.shardminvalue, s.shardmaxvalue, n.nodename, n.nodeport, n.hasmetadata AND n.metadatasynced AS metadata
		  FROM pg_dist_shard s
		  JOIN pg_dist_placement p ON p.shardid = s.shardid
		  JOIN pg_dist_node n ON n.groupid = p.groupid
		 WHERE s.logicalrelid = 'accounts'::regclass AND n.isactive AND n.noderole = 'primary'
		 ORDER BY s.shardminvalue::int`)
	if err != nil {
		return fmt.Errorf("read the placements of the accounts: %w", err)
	}
	ranges := make([]hashRange, 0, len(rows))
	for _, row := range rows {
		lo, err1 := strconv.ParseInt(row.Min, 10, 32)
		hi, err2 := strconv.ParseInt(row.Max, 10, 32)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("shard range %s..%s of accounts is not a hash range", row.Min, row.Max)
		}
		addr := ""
		if row.Meta {
			addr = row.Host + ":" + strconv.Itoa(row.Port)
		}
		ranges = append(ranges, hashRange{min: int32(lo), max: int32(hi), addr: addr})
	}
	r.mu.Lock()
	r.ranges = ranges
	r.mu.Unlock()
	return nil
}

func (r *Router) loop() {
	defer close(r.done)
	t := time.NewTicker(r.opts.Refresh)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), r.opts.Refresh)
			if err := r.refresh(ctx); err != nil {
				r.opts.Log.Warn("routing to Citus nodes: keeping the last placements", "err", err)
			}
			cancel()
		}
	}
}

// Nodes returns the nodes opened so far, the coordinator first.
func (r *Router) Nodes() []*Node {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := []*Node{r.coord}
	addrs := make([]string, 0, len(r.nodes))
	for a := range r.nodes {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, a := range addrs {
		out = append(out, r.nodes[a])
	}
	return out
}

// Close stops the refreshes and closes the pools of the nodes (not the
// coordinator's, which the caller opened).
func (r *Router) Close() error {
	if r == nil {
		return nil
	}
	if r.stop != nil {
		close(r.stop)
		<-r.done
		r.stop = nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for a, n := range r.nodes {
		n.DB.Close()
		n.Generic.Close()
		delete(r.nodes, a)
	}
	return nil
}

// HashInt8 is PostgreSQL's hash of a bigint (hashint8), by which Citus places
// a row whose distribution column is a bigint in the shard whose range holds
// it.
func HashInt8(v int64) int32 {
	lo, hi := uint32(v), uint32(uint64(v)>>32)
	if v >= 0 {
		lo ^= hi
	} else {
		lo ^= ^hi
	}
	// hash_bytes_uint32: Bob Jenkins' lookup3, one 32-bit word.
	a := uint32(0x9e3779b9) + 4 + 3923095
	b, c := a, a
	a += lo
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return int32(c)
}

// ParseNodeAddresses reads a list of node addresses and where to reach them
// instead, "host:port=host:port" separated by commas (CITUS_NODES).
func ParseNodeAddresses(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		from, to, ok := strings.Cut(pair, "=")
		if !ok || !validHostPort(from) || !validHostPort(to) {
			return nil, fmt.Errorf("%q is not host:port=host:port", pair)
		}
		out[from] = to
	}
	return out, nil
}

func validHostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n < 65536
}
