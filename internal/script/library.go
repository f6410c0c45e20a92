package script

import "github.com/redisync/redisync/backend/driver"

// Library is the function library of every script of the package (see
// driver.NewLibrary): a Backend calls them with FCALL where the server
// allows functions, and with EVALSHA elsewhere. Its name is "redisync_"
// followed by a digest of the scripts, so that each release of the
// scripts has a library of its own.
var Library *driver.Library

// defined is every script the package defined, in order: made by newDef
// while the package's variables are initialised, gathered into Library
// once they all are.
var defined []*driver.Script

func init() { Library = driver.NewLibrary("redisync", defined...) }
