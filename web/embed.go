// Package web holds the web console: a TypeScript single-page app built by
// Vite into dist/, which is committed so that building the service needs no
// Node.js. `make web` rebuilds it; CI fails when it is stale.
package web

import (
	"embed"
	"io/fs"
)

//go:embed dist
var dist embed.FS

// Dist is the built console: index.html and assets/.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // "dist" is a valid path: fs.Sub cannot fail on it
	}
	return sub
}
