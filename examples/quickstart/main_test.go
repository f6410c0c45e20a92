package main

import (
	"testing"

	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestQuickstartEmbedded(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	if err := run(); err != nil {
		t.Fatalf("quickstart: %v", err)
	}
}

func TestQuickstartRedisURL(t *testing.T) {
	n := redistest.SharedNode(t)
	t.Setenv("REDIS_URL", "redis://"+n.Addr+"/0")
	if err := run(); err != nil {
		t.Fatalf("quickstart with REDIS_URL: %v", err)
	}
}
