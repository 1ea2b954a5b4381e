// Package migrations holds the goose SQL migrations of the service's schema,
// embedded so that the binary migrates the database it is given.
package migrations

import "embed"

// FS holds every migration, applied in the order of their numeric prefix.
//
//go:embed *.sql
var FS embed.FS
