//go:build !norwmutex

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/rwmutex"
)

// rwmutexImpl is redisync's RWMutex for scenario 3: one handle per process,
// shared by its goroutines, whose readers share one hold on the server.
func rwmutexImpl(budget time.Duration) *Impl {
	return &Impl{
		Key:   "rwmutex",
		Label: "redisync RWMutex",
		Setup: fmt.Sprintf("rwmutex.New(b, name) with default options, one handle per process shared by its goroutines; each RLock/Lock bounded by a %v context deadline", budget),
		ConnectRW: func(addrs []string) (RWClient, error) {
			c, err := connectRedisync(addrs, budget, nil)
			if err != nil {
				return nil, err
			}
			return &rwClient{c: c, budget: budget}, nil
		},
	}
}

type rwClient struct {
	c      *redisyncClient
	budget time.Duration
}

func (r *rwClient) RWHandle(name string) (RWHandle, error) {
	m, err := rwmutex.New(r.c.b, name)
	if err != nil {
		return nil, err
	}
	return &rwHandle{m: m, budget: r.budget}, nil
}

func (r *rwClient) Shared() bool      { return true }
func (r *rwClient) RoundTrips() int64 { return r.c.RoundTrips() }
func (r *rwClient) Close()            { r.c.Close() }

type rwHandle struct {
	m      *rwmutex.RWMutex
	budget time.Duration
}

func (h *rwHandle) Lock(ctx context.Context) error {
	ctx, cancel := withBudget(ctx, h.budget)
	defer cancel()
	return h.m.Lock(ctx)
}

func (h *rwHandle) Unlock(ctx context.Context) error { return h.m.Unlock(ctx) }

func (h *rwHandle) RLock(ctx context.Context) error {
	ctx, cancel := withBudget(ctx, h.budget)
	defer cancel()
	return h.m.RLock(ctx)
}

func (h *rwHandle) RUnlock(ctx context.Context) error { return h.m.RUnlock(ctx) }
