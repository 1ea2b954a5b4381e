// Package migrations holds the goose SQL migrations of the service's schema,
// embedded so that the binary migrates the database it is given.
package migrations

import "embed"

// FS holds every migration, applied in the order of their numeric prefix;
// one numbered below the database's version but not yet applied is applied
// too (store.Migrate allows it), since each migration creates only what it
// owns.
//
//go:embed *.sql
var FS embed.FS
