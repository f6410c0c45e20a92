// Package security holds the tests of redisync against locked-down Redis
// deployments: a Redis ACL user confined to what redisync needs, and TLS.
// It has no code of its own; see security_test.go and README.md's "Access"
// section for the ACL rule these tests check.
package security
