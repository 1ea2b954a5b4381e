package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
)

// The service's own SQL, copied from store/readings.go, where it is
// unexported: the raw figures are the limits of exactly what the service
// runs. checkServiceSQL fails the run when the copies no longer match, so
// that the bench never measures SQL the service has stopped using.
const (
	createIncomingSQL = `CREATE TEMP TABLE readings_incoming (LIKE readings) ON COMMIT DROP`
	upsertIncomingSQL = `
INSERT INTO readings (sensor_id, datetime, input_ids, vals)
SELECT sensor_id, datetime, input_ids, vals FROM readings_incoming
ON CONFLICT (sensor_id, datetime) DO UPDATE SET input_ids = EXCLUDED.input_ids, vals = EXCLUDED.vals`
	listReadingsAscSQL = `
SELECT datetime, input_ids, vals FROM readings
WHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3
ORDER BY datetime LIMIT $4 OFFSET $5`
)

// readingColumns are the columns the service copies, in its order.
var readingColumns = []string{"sensor_id", "datetime", "input_ids", "vals"}

// checkServiceSQL compares the copies above with the constants of the same
// names in store/readings.go.
func checkServiceSQL(root string) error {
	path := filepath.Join(root, "store", "readings.go")
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("read the service's SQL: %w", err)
	}
	want := map[string]string{
		"createIncomingSQL":  createIncomingSQL,
		"upsertIncomingSQL":  upsertIncomingSQL,
		"listReadingsAscSQL": listReadingsAscSQL,
	}
	found := map[string]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range spec.Names {
			copied, ok := want[name.Name]
			if !ok || i >= len(spec.Values) {
				continue
			}
			lit, ok := spec.Values[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && s == copied {
				found[name.Name] = true
			}
		}
		return true
	})
	for name := range want {
		if !found[name] {
			return fmt.Errorf("%s in %s is no longer the bench's copy; update scripts/bench/sql.go", name, path)
		}
	}
	return nil
}
