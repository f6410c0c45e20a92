// Package security holds the tests of redisync against locked-down Redis
// deployments: a Redis ACL user confined to what redisync needs, and TLS.
// It has no code of its own; see security_test.go and README.md's "Access"
// section for the ACL rule these tests check.
//
// It is a package of the nested module github.com/redisync/redisync/tests
// (directory tests/security), run by the README's test command; on its own,
// from the repository's root:
//
//	go test -C tests -race -count=1 ./security
package security
