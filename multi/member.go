package multi

import (
	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/internal/holdopt"
	"github.com/redisync/redisync/locker"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/rwmutex"
)

type kind int

const (
	kindMutex kind = iota
	kindFair
	kindWrite
	kindRead
)

func (k kind) String() string {
	return [...]string{"mutex", "fair", "write", "read"}[k]
}

// A Member names one lock of a multi-lock and the primitive it is.
type Member struct {
	kind kind
	name string
}

// Mutex is the mutex.Mutex called name.
func Mutex(name string) Member { return Member{kindMutex, name} }

// Fair is the fair.Mutex called name.
func Fair(name string) Member { return Member{kindFair, name} }

// Write is the write side of the rwmutex.RWMutex called name.
func Write(name string) Member { return Member{kindWrite, name} }

// Read is the read side of the rwmutex.RWMutex called name.
func Read(name string) Member { return Member{kindRead, name} }

// Name returns the member's lock name.
func (m Member) Name() string { return m.name }

// String returns "<kind> <name>", such as "mutex accounts:1".
func (m Member) String() string { return m.kind.String() + " " + m.name }

// handle is a member's lock handle: every primitive's handle is a Locker
// and a Lease.
type handle interface {
	locker.Locker
	locker.Lease
}

// newHandle builds the handle of m on b with cfg.
func (m Member) newHandle(b backend.Backend, cfg holdopt.Config) (handle, error) {
	switch m.kind {
	case kindFair:
		return fair.New(b, m.name, fair.WithTTL(cfg.TTL), fair.WithWatchdog(cfg.Watchdog), fair.WithBackoff(cfg.Backoff))
	case kindWrite, kindRead:
		rw, err := rwmutex.New(b, m.name, rwmutex.WithTTL(cfg.TTL), rwmutex.WithWatchdog(cfg.Watchdog), rwmutex.WithBackoff(cfg.Backoff))
		if err != nil {
			return nil, err
		}
		if m.kind == kindRead {
			return rw.RLocker().(handle), nil
		}
		return rw, nil
	}
	return mutex.New(b, m.name, mutex.WithTTL(cfg.TTL), mutex.WithWatchdog(cfg.Watchdog), mutex.WithBackoff(cfg.Backoff))
}
