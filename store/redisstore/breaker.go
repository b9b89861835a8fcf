package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// This file holds what keeps a Redis that stops answering from holding
// every call: a deadline on each round trip, and a circuit breaker per
// Redis server that, after round trips in a row went unanswered, fails
// calls at once for a cool-down instead of sending them.

// Defaults of the Config fields of this file.
const (
	// DefaultTimeout is the default of [Config.Timeout]: far above a
	// round trip's time on a loaded network (a round trip carries at most
	// 16 MiB), far below the minute a stalled call would otherwise hold a
	// tool call.
	DefaultTimeout = 5 * time.Second
	// DefaultBreakerFailures is the default of [Config.BreakerFailures].
	DefaultBreakerFailures = 3
	// DefaultBreakerCooldown is the default of [Config.BreakerCooldown].
	DefaultBreakerCooldown = 10 * time.Second
)

// Errors of a Redis that does not answer. Both are wrapped, with %w, by
// the error of the call that met them; use [errors.Is].
var (
	// ErrTimeout means a round trip to Redis took longer than
	// [Config.Timeout]: the call failed and did not wait further. Whether
	// Redis carried out the commands of that round trip is unknown (a
	// write may still happen once Redis answers again).
	ErrTimeout = errors.New("redisstore: Redis did not answer in time")
	// ErrCircuitOpen means the call was failed without sending anything:
	// round trips in a row to the Redis server that holds its keys went
	// unanswered ([Config.BreakerFailures]), and the cool-down
	// ([Config.BreakerCooldown]) has not run out, or another call is
	// probing whether the server answers again.
	ErrCircuitOpen = errors.New("redisstore: circuit open: Redis is not answering")
)

// breaker is the circuit breaker of one Redis server. Closed, it lets
// every round trip through and counts the unanswered ones in a row; at
// the threshold it opens until the cool-down runs out, failing every
// round trip at once; then it lets one through, the probe: an answer
// closes it, no answer opens it for another cool-down.
type breaker struct {
	mu     sync.Mutex
	fails  int       // unanswered round trips in a row
	until  time.Time // while fails >= threshold: when the next probe may go
	probe  bool      // a probe is in flight
	last   error     // the last unanswered round trip's error
	server string    // for messages
}

// allow reports whether a round trip may go at now, and whether it is the
// probe; if not, the error says why.
func (b *breaker) allow(now time.Time, threshold int) (probe bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fails < threshold {
		return false, nil
	}
	if now.Before(b.until) || b.probe {
		return false, fmt.Errorf("%w: %d round trips in a row to %s went unanswered (the last: %v); nothing is sent to it until %s", ErrCircuitOpen, b.fails, b.server, b.last, b.until.UTC().Format(time.RFC3339))
	}
	b.probe = true
	return true, nil
}

// done records how a round trip that allow let go ended at now:
// answered, or unanswered with err.
func (b *breaker) done(now time.Time, probe, answered bool, err error, threshold int, cooldown time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probe = false
	}
	if answered {
		b.fails, b.last = 0, nil
		return
	}
	b.fails++
	b.last = err
	if b.fails >= threshold {
		b.until = now.Add(cooldown)
	}
}

// answered reports whether err, the error of a round trip, shows that
// Redis answered it: no error, a nil reply or an error reply.
func answered(err error) bool {
	var re redis.Error
	return err == nil || errors.Is(err, redis.Nil) || errors.As(err, &re)
}

// isTimeout reports whether err is a deadline running out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// do runs f, one round trip to the Redis server that holds key (or any
// key of its hash slot), within that server's breaker and with a deadline
// of the store's timeout. An unanswered round trip's error is wrapped with
// ErrTimeout when the deadline ran out; a round trip the breaker refuses
// is not sent and fails with ErrCircuitOpen.
func (s *Store) do(key string, f func(ctx context.Context) error) error {
	b := s.breakerFor(key)
	var probe bool
	if s.failures > 0 {
		var err error
		if probe, err = b.allow(s.cfg.Now(), s.failures); err != nil {
			return err
		}
	}
	ctx, cancel := s.context()
	err := f(ctx)
	cancel()
	ok := answered(err)
	if !ok && isTimeout(err) {
		err = fmt.Errorf("%w (Config.Timeout %v): %w", ErrTimeout, s.timeout, err)
	}
	if s.failures > 0 {
		b.done(s.cfg.Now(), probe, ok, err, s.failures, s.cooldown)
	}
	return err
}

// context returns the context of one round trip.
func (s *Store) context() (context.Context, context.CancelFunc) {
	if s.timeout < 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), s.timeout)
}

// breakerFor returns the breaker of the Redis server that holds key: the
// one of the store on a single server; on a cluster, the one of the
// master serving key's slot (of the whole cluster when the cluster's
// layout cannot be had).
func (s *Store) breakerFor(key string) *breaker {
	server := ""
	if c, ok := s.rdb.(*redis.ClusterClient); ok && s.failures > 0 {
		ctx, cancel := s.context()
		if m, err := c.MasterForKey(ctx, key); err == nil {
			server = m.Options().Addr
		}
		cancel()
	}
	s.breakers.Lock()
	defer s.breakers.Unlock()
	b := s.breakers.m[server]
	if b == nil {
		b = &breaker{server: "Redis"}
		if server != "" {
			b.server = "Redis at " + server
		}
		if s.breakers.m == nil {
			s.breakers.m = map[string]*breaker{}
		}
		s.breakers.m[server] = b
	}
	return b
}
