// Package tools pins the project's developer tools (staticcheck, templ) with
// `tool` directives in its go.mod, and holds the command-line programs of
// the kit: adkctl (schema and preflight checks) and, in its own module,
// adkbench.
package tools
