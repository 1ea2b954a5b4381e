// Package gen holds the code oapi-codegen generates from openapi/openapi.yaml
// for the server: the models and the Echo strict server interface. The Go
// client, with models of its own, is in gen/client. Nothing here is edited
// by hand; run `make generate`.
package gen

//go:generate go tool oapi-codegen -config ../openapi/server.cfg.yaml ../openapi/openapi.yaml
//go:generate go tool oapi-codegen -config ../openapi/client.cfg.yaml ../openapi/openapi.yaml
