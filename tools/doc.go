// Package tools pins the project's developer tools (staticcheck, templ) with
// `tool` directives in its go.mod, and holds the command-line programs of
// the kit: adkctl (the operator's terminal tool: queues, tenants, leases,
// dead letters, items, health and the PostgreSQL schema) and, in its own
// module, adkbench.
package tools
