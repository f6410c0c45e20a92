// Package embedded gives the tests inside this module the embedded Redis of
// package redisynctest under its earlier name.
package embedded

import "github.com/redisync/redisync/redisynctest"

// A Server is a running embedded Redis; see redisynctest.Server.
type Server = redisynctest.Server

// Start starts a Server; see redisynctest.Start.
func Start() (*Server, error) { return redisynctest.Start() }
