// Package gen holds the code oapi-codegen generates from openapi/openapi.yaml:
// the models, the Echo strict server interface and a Go client. Nothing here is edited by hand; run `make generate`.
package gen

//go:generate go tool oapi-codegen -config ../openapi/server.cfg.yaml ../openapi/openapi.yaml
//go:generate go tool oapi-codegen -config ../openapi/client.cfg.yaml ../openapi/openapi.yaml
