package impl

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Two limits guard the API, and both decide the same way, by GCRA (the generic
// cell rate algorithm: a token bucket that keeps one time per key instead of a
// count and a time):
//
//   - every bearer token may make Config.RateLimit requests per second, in
//     bursts of Config.RateBurst;
//   - every client address may fail authentication Config.AuthFailureLimit
//     times per minute, in bursts of Config.AuthFailureBurst; past that its
//     failures are answered 429 instead of 401, and a token that would need a
//     database lookup is refused before the lookup (authenticate, auth.go).
//
// With Config.Redis the counters live in Redis, so that every process of a
// deployment shares them and a limit holds behind a load balancer; each
// decision is one Lua script, atomic in Redis, timed by Redis's clock so that
// the processes' clocks do not matter. Without it they live in the process.
//
// When Redis does not answer, decisions fall back to the process's own
// counters, with one warning in the log, and one request probes Redis again
// every sharedRetry: for a while the limits then hold per process, but no
// request fails because a counter is out of reach.

// sharedRetry is how long the limits keep to the process after Redis failed
// before one request tries it again.
const sharedRetry = 5 * time.Second

// How long a token that authenticated is remembered, so that a client address
// past its failure limit is still served it; and how often a process renews
// the shared record of a token it keeps seeing.
const (
	knownTokenMemory  = 24 * time.Hour
	knownTokenRefresh = 10 * time.Minute
)

// OpenRedis returns a client of the Redis at rawURL (redis://[[user]:password@]host[:port][/db],
// rediss:// for TLS) for Config.Redis. Unless the URL sets them (dial_timeout,
// read_timeout, write_timeout, pool_timeout, max_retries), Redis gets 250 ms
// per attempt and one retry before the process decides alone.
// OpenRedis does not connect: a server whose Redis is down still starts, and
// limits in the process until Redis answers.
func OpenRedis(rawURL string) (*redis.Client, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		// url.Error quotes the whole URL, password included.
		if urlErr := (*url.Error)(nil); errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	const wait = 250 * time.Millisecond
	if opt.DialTimeout == 0 {
		opt.DialTimeout = wait
	}
	if opt.ReadTimeout == 0 {
		opt.ReadTimeout = wait
	}
	if opt.WriteTimeout == 0 {
		opt.WriteTimeout = wait
	}
	if opt.PoolTimeout == 0 {
		opt.PoolTimeout = wait
	}
	if opt.MaxRetries == 0 {
		opt.MaxRetries = 1 // a pooled connection that Redis closed meanwhile
	}
	// go-redis dials five times by default, 100 ms apart: the fallback is ours.
	opt.DialerRetries = 1
	// Neither CLIENT SETINFO nor the maintenance notifications of Redis
	// Enterprise serve a limiter; each would cost a round trip per connection.
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return redis.NewClient(opt), nil
}

// ParseTrustedProxies reads the reverse proxies whose X-Forwarded-For the
// server believes (Config.TrustedProxies): CIDRs or single addresses,
// separated by commas or spaces.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("trusted proxies: %w", err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("trusted proxies: %w", err)
		}
		a = a.Unmap().WithZone("")
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// limits holds the server's two limits and what they share.
type limits struct {
	tokens   *limiter // requests per bearer token
	failures *limiter // failed authentications per client address
	known    *knownTokens
	proxies  []netip.Prefix
	tokenMsg string
	failMsg  string
	metrics  *Metrics // counts the refusals; nil counts nothing
}

func newLimits(cfg Config) *limits {
	var shared *sharedStore
	if cfg.Redis != nil {
		prefix := cfg.RedisPrefix
		if prefix == "" {
			prefix = "crm:"
		}
		shared = &sharedStore{rdb: cfg.Redis, prefix: prefix + "ratelimit:", log: cfg.Log}
	}
	return &limits{
		tokens:   newLimiter("token", cfg.RateLimit, time.Second, cfg.RateBurst, shared),
		failures: newLimiter("authfail", cfg.AuthFailureLimit, time.Minute, cfg.AuthFailureBurst, shared),
		known:    &knownTokens{seen: map[[16]byte]time.Time{}, shared: shared},
		proxies:  cfg.TrustedProxies,
		tokenMsg: fmt.Sprintf("rate limit exceeded: %g requests per second per token", cfg.RateLimit),
		failMsg:  fmt.Sprintf("too many failed authentications: %g per minute per client address", cfg.AuthFailureLimit),
		metrics:  cfg.Metrics,
	}
}

// tokenRequest counts one request of the principal's token, or refuses it
// with 429 once the token is over its limit.
func (l *limits) tokenRequest(ctx context.Context, p *Principal) error {
	if wait, ok := l.tokens.take(ctx, strconv.FormatInt(p.TokenID, 10)); !ok {
		l.metrics.rateLimitRejected("token")
		return tooMany(l.tokenMsg, wait)
	}
	return nil
}

// authFailed counts a failed authentication of the request's client address
// and returns the reply: err (the 401), or a 429 once the address is past its
// limit.
func (l *limits) authFailed(r *http.Request, err *Error) error {
	if !l.failures.on() {
		return err
	}
	if wait, ok := l.failures.take(r.Context(), l.clientKey(r)); !ok {
		l.metrics.rateLimitRejected("auth_failure")
		return tooMany(l.failMsg, wait)
	}
	return err
}

// beforeLookup refuses with 429 a token that only a database lookup could tell
// valid when the request's client address is past its failure limit, unless
// the token authenticated within knownTokenMemory: failures are counted, and
// valid tokens keep being served from an address that others abuse (a
// company's NAT, a mobile carrier's).
func (l *limits) beforeLookup(r *http.Request, hash []byte) error {
	if !l.failures.on() || l.known.knownHere(hash, time.Now()) {
		return nil
	}
	wait, ok := l.failures.room(r.Context(), l.clientKey(r))
	if ok || l.known.knownShared(r.Context(), hash) {
		return nil
	}
	l.metrics.rateLimitRejected("auth_failure")
	return tooMany(l.failMsg, wait)
}

// authenticated remembers a token that authenticated (see beforeLookup).
func (l *limits) authenticated(ctx context.Context, hash []byte) {
	if l.failures.on() {
		l.known.add(ctx, hash, time.Now())
	}
}

func tooMany(msg string, wait time.Duration) *Error {
	return &Error{Code: CodeTooMany, Msg: msg, RetryAfter: int(math.Ceil(wait.Seconds()))}
}

// clientKey names the client of a request for the failure limit: the address
// the connection comes from, or, when that is a trusted proxy, the client
// address that the proxies' X-Forwarded-For gives. An IPv6 address counts by
// its /64 network, since one host commonly has a whole /64 to pick from.
func (l *limits) clientKey(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		// Not an IP connection (a Unix socket): everything on it is one client.
		return r.RemoteAddr
	}
	client := ap.Addr().Unmap().WithZone("")
	if l.trusted(client) {
		client = l.forwardedFor(r, client)
	}
	if client.Is6() {
		return netip.PrefixFrom(client, 64).Masked().String()
	}
	return client.String()
}

// forwardedFor is the client address that X-Forwarded-For gives behind the
// trusted proxy hop. Each proxy appends the address it was connected from, so
// the list is read from the right: the first address that is not a trusted
// proxy is the client, and whatever lies left of it the client wrote itself.
func (l *limits) forwardedFor(r *http.Request, hop netip.Addr) netip.Addr {
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			// Garbage where a trusted proxy should have written an address:
			// the last hop that can be named stands for the client.
			return hop
		}
		hop = a
		if !l.trusted(a) {
			return a
		}
	}
	return hop
}

// parseHop reads one address of X-Forwarded-For, which some proxies write
// with a port.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	return a.Unmap().WithZone(""), true
}

func (l *limits) trusted(a netip.Addr) bool {
	for _, p := range l.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// limiter makes the decisions of one limit, keyed by a string.
type limiter struct {
	name     string        // the kind of key, part of its name in Redis
	interval time.Duration // one event per interval on average; 0: no limit
	burst    int
	local    *localGCRA
	shared   *sharedStore // nil: the process's own counters only
}

// newLimiter returns the limiter of rate events per period in bursts of burst
// (at least one, and rate when burst is below one); rate 0 switches it off.
func newLimiter(name string, rate float64, per time.Duration, burst int, shared *sharedStore) *limiter {
	l := &limiter{name: name, local: &localGCRA{tat: map[string]time.Time{}}, shared: shared}
	if rate <= 0 {
		return l
	}
	if burst < 1 {
		burst = int(math.Max(1, math.Ceil(rate)))
	}
	// Redis counts in microseconds.
	l.interval = max(time.Duration(float64(per)/rate), time.Microsecond)
	l.burst = burst
	return l
}

func (l *limiter) on() bool { return l.interval > 0 }

// take counts one event of key, unless that would exceed the limit: it then
// reports how long until it would not.
func (l *limiter) take(ctx context.Context, key string) (wait time.Duration, ok bool) {
	return l.decide(ctx, key, true)
}

// room reports whether one more event of key would be within the limit,
// without counting it.
func (l *limiter) room(ctx context.Context, key string) (wait time.Duration, ok bool) {
	return l.decide(ctx, key, false)
}

func (l *limiter) decide(ctx context.Context, key string, take bool) (time.Duration, bool) {
	if !l.on() {
		return 0, true
	}
	if l.shared != nil && l.shared.usable() {
		wait, ok, err := l.shared.gcra(ctx, l.name+":"+key, l.interval, l.burst, take)
		if err == nil {
			l.shared.answered(ctx)
			return wait, ok
		}
		l.shared.failed(ctx, err)
	}
	return l.local.decide(key, time.Now(), l.interval, l.burst, take)
}

// localGCRA keeps the theoretical arrival time of each key in the process:
// the time at which its allowance would be whole again were every event on
// schedule.
type localGCRA struct {
	mu    sync.Mutex
	tat   map[string]time.Time
	sweep time.Time
}

func (g *localGCRA) decide(key string, now time.Time, interval time.Duration, burst int, take bool) (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.sweep) > time.Minute {
		// A key whose time has passed has its whole burst again, as a new one.
		for k, t := range g.tat {
			if !t.After(now) {
				delete(g.tat, k)
			}
		}
		g.sweep = now
	}
	tat := g.tat[key]
	if tat.Before(now) {
		tat = now
	}
	if wait := tat.Add(interval - time.Duration(burst)*interval).Sub(now); wait > 0 {
		return wait, false
	}
	if take {
		g.tat[key] = tat.Add(interval)
	}
	return 0, true
}

// sharedStore is the Redis that keeps the limits of every process of a
// deployment.
type sharedStore struct {
	rdb    *redis.Client
	prefix string
	log    *slog.Logger
	// downUntil is when to try Redis again after it failed, in Unix
	// nanoseconds; 0 while it answers.
	downUntil atomic.Int64
}

// gcraScript is one decision of a limit, the same as localGCRA.decide:
// KEYS[1] holds the theoretical arrival time in microseconds of Redis's clock;
// ARGV: the interval in microseconds, the burst, 1 to count the event or 0 to
// ask only. It answers {1, 0} when the event is within the limit, {0, wait in
// microseconds} when not. The key expires when its time has passed, as it then
// means no more than a missing one. The time is written with %.0f because
// tostring would round 16 digits to 14.
var gcraScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then
  tat = now
end
local wait = tat + interval - burst * interval - now
if wait > 0 then
  return {0, math.ceil(wait)}
end
if ARGV[3] == '1' then
  local new = tat + interval
  redis.call('SET', KEYS[1], string.format('%.0f', new), 'PX', math.ceil((new - now) / 1000))
end
return {1, 0}
`)

func (s *sharedStore) gcra(ctx context.Context, key string, interval time.Duration, burst int, take bool) (time.Duration, bool, error) {
	count := 0
	if take {
		count = 1
	}
	res, err := gcraScript.Run(ctx, s.rdb, []string{s.prefix + key}, interval.Microseconds(), burst, count).Int64Slice()
	if err != nil {
		return 0, false, fmt.Errorf("rate limit script: %w", err)
	}
	if len(res) != 2 {
		return 0, false, fmt.Errorf("rate limit script answered %d values", len(res))
	}
	return time.Duration(res[1]) * time.Microsecond, res[0] == 1, nil
}

// usable reports whether to ask Redis: while it answers, and once every
// sharedRetry after it failed, when one request probes it while the others
// keep to the process.
func (s *sharedStore) usable() bool {
	until := s.downUntil.Load()
	if until == 0 {
		return true
	}
	now := time.Now().UnixNano()
	return now >= until && s.downUntil.CompareAndSwap(until, now+int64(sharedRetry))
}

func (s *sharedStore) answered(ctx context.Context) {
	if s.downUntil.Load() != 0 && s.downUntil.Swap(0) != 0 {
		s.log.InfoContext(ctx, "rate limit store answers again: the limits are shared by every process")
	}
}

func (s *sharedStore) failed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return // the client went away: no news about Redis
	}
	if s.downUntil.Swap(time.Now().Add(sharedRetry).UnixNano()) == 0 {
		s.log.WarnContext(ctx, "rate limit store unreachable: each process limits on its own until it answers", "err", err)
	}
}

// knownTokens remembers the tokens that authenticated lately by the first
// half of their SHA-256, in the process and, with Redis, for every process.
type knownTokens struct {
	mu     sync.Mutex
	seen   map[[16]byte]time.Time // when this process last recorded the token
	sweep  time.Time
	shared *sharedStore
}

// knownHere reports whether this process saw the token authenticate lately.
func (k *knownTokens) knownHere(hash []byte, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	t, ok := k.seen[[16]byte(hash)]
	return ok && now.Sub(t) < knownTokenMemory
}

// knownShared asks Redis whether any process saw the token authenticate
// lately, and notes it in this process when so.
func (k *knownTokens) knownShared(ctx context.Context, hash []byte) bool {
	s := k.shared
	if s == nil || !s.usable() {
		return false
	}
	n, err := s.rdb.Exists(ctx, k.key(hash)).Result()
	if err != nil {
		s.failed(ctx, fmt.Errorf("known token: %w", err))
		return false
	}
	s.answered(ctx)
	if n == 0 {
		return false
	}
	k.mu.Lock()
	k.seen[[16]byte(hash)] = time.Now()
	k.mu.Unlock()
	return true
}

// add records a token that authenticated; a token seen again within
// knownTokenRefresh costs no write to Redis.
func (k *knownTokens) add(ctx context.Context, hash []byte, now time.Time) {
	id := [16]byte(hash)
	k.mu.Lock()
	if now.Sub(k.sweep) > time.Hour {
		for h, t := range k.seen {
			if now.Sub(t) >= knownTokenMemory {
				delete(k.seen, h)
			}
		}
		k.sweep = now
	}
	t, ok := k.seen[id]
	fresh := ok && now.Sub(t) < knownTokenRefresh
	if !fresh {
		k.seen[id] = now
	}
	k.mu.Unlock()
	s := k.shared
	if fresh || s == nil || !s.usable() {
		return
	}
	if err := s.rdb.Set(ctx, k.key(hash), 1, knownTokenMemory).Err(); err != nil {
		s.failed(ctx, fmt.Errorf("record known token: %w", err))
		return
	}
	s.answered(ctx)
}

func (k *knownTokens) key(hash []byte) string {
	return k.shared.prefix + "known:" + hex.EncodeToString(hash[:16])
}
